#pragma once
/// torchrun-compatible command line parsing (CLI11): both spellings, PET_* fallbacks.

#include <string>
#include <variant>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// `--help` or `--version` was asked for: print `text` to stdout and exit 0.
struct InfoRequest {
    std::string text;
};

/// Parses `args` (argv without argv[0]); options not on the command line fall back to
/// `PET_<NAME>` in `env`, then to torchrun's defaults. Throws UsageError on bad input.
std::variant<LaunchOptions, InfoRequest> parse_command_line(const std::vector<std::string>& args,
                                                            const env::EnvMap& env);

/// parse_command_line's full parser, CLI11, for `whole` (after expand_option_prefixes): what
/// parse_command_line uses for --help, --version, errors and anything parse_plain_command_line
/// leaves to it; tests compare the two.
std::variant<LaunchOptions, InfoRequest> parse_command_line_with_cli11(
    const std::vector<std::string>& whole, const env::EnvMap& env);

}  // namespace ptrun::launcher
