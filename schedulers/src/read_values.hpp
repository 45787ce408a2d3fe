#pragma once
/// Helpers the readers share (private to schedulers/): typed values read from an env map, each
/// remembering its variable.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "ptrun/env/env_map.hpp"
#include "ptrun/schedulers/host_file.hpp"
#include "ptrun/schedulers/topology.hpp"

namespace ptrun::schedulers::detail {

/// The largest task count a reader accepts (ranks, sizes): 2^24.
inline constexpr int kMaxTasks = 1 << 24;

/// `name` when it is set in `env`.
std::optional<std::string> if_set(const env::EnvMap& env, std::string_view name);

/// The integer in `name` (min..max) with its origin, or nullopt when unset; throws
/// env::ParseError naming the variable and its value otherwise.
std::optional<Sourced<int>> optional_int(const env::EnvMap& env, std::string_view name, int min,
                                         int max);

/// As optional_int, but an unset variable is an error saying `why` it is needed.
Sourced<int> required_int(const env::EnvMap& env, std::string_view name, int min, int max,
                          std::string_view why);

/// The most bytes of a plain value (a job id, a host, a name).
inline constexpr std::size_t kMaxValueBytes = 4096;

/// The text of `name`, or nullopt; values longer than `max_bytes` are an error naming it. A host
/// list takes kMaxHostFileBytes, as a host file does.
std::optional<Sourced<std::string>> optional_text(const env::EnvMap& env, std::string_view name,
                                                  std::size_t max_bytes = kMaxValueBytes);

/// `host` from `name` as a master address: a host name or address (host_file's rules).
std::optional<Sourced<std::string>> optional_host(const env::EnvMap& env, std::string_view name);

/// Throws env::ParseError naming `subject` unless `host` is one host name or address.
void check_host_name(const std::string& host, const std::string& subject);

/// nodes = world / local size, when every node runs the same number of tasks; throws naming the
/// variables when `local` does not divide `world`.
Sourced<int> nodes_from_sizes(const Sourced<int>& world, const Sourced<int>& local);

/// "NAME='value'" for messages (the value as set, cut at 64 bytes).
std::string shown(const env::EnvMap& env, std::string_view name);

}  // namespace ptrun::schedulers::detail
