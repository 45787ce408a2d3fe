#pragma once
/// The environment `ptrun --hosts` hands each host's ptrun: the PET_* variables, those named by
/// --export, and a `.ptrun_env` file in the working directory (as DeepSpeed's .deepspeed_env).
/// Pure: the launching ptrun's environment and the file's text in, NAME/value pairs out.

#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/env/env_map.hpp"

namespace ptrun::launcher {

/// The file read from the working directory, when it exists.
inline constexpr std::string_view kRemoteEnvFile = ".ptrun_env";

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

/// True when `name` is a variable name: [A-Za-z_][A-Za-z0-9_]*.
bool variable_name(std::string_view name);

/// A `.ptrun_env` text: one NAME=VALUE a line (VALUE as written, to the line's end), blank lines
/// and lines starting with '#' skipped. Throws UsageError naming `path` and the line otherwise.
EnvPairs parse_env_file(std::string_view text, std::string_view path);

/// What every host gets, in order: the PET_* variables of `env` (except those of --hosts and its
/// options, which make no sense there), then each variable `exports` names (`VAR,VAR,...`, each
/// one set here: UsageError otherwise), then `file` (parse_env_file's pairs).
EnvPairs remote_env(const env::EnvMap& env, std::string_view exports, const EnvPairs& file);

}  // namespace ptrun::launcher
