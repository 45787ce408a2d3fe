#pragma once
/// An environment as a value: the launcher's and the workers' variables, never read with getenv.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ptrun::env {

/// Variable name -> value. Only `main` fills one from the real process environment.
using EnvMap = std::map<std::string, std::string, std::less<>>;

/// A variable holds a value of the wrong shape; the message names the variable and the value.
struct ParseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The value of `name`, or nullopt when unset. An empty value counts as set.
std::optional<std::string> lookup(const EnvMap& env, std::string_view name);

/// Parses a whole decimal integer (optional sign); nullopt on anything else, overflow included.
std::optional<std::int64_t> parse_int(std::string_view text);

/// Parses torchrun's boolean spellings: 1/true/True/yes or 0/false/False/no; nullopt otherwise.
std::optional<bool> parse_bool(std::string_view text);

/// Parses a whole non-negative number of seconds up to 1e7 (fractions allowed); nullopt otherwise.
std::optional<double> parse_seconds(std::string_view text);

/// The integer in `name`, or nullopt when unset; throws ParseError naming the variable when it is
/// not an integer in [min, max].
std::optional<std::int64_t> lookup_int(const EnvMap& env, std::string_view name, std::int64_t min,
                                       std::int64_t max);

/// Reads `KEY=VALUE` strings (as in `environ`) into a map; entries without '=' are skipped.
EnvMap from_environ(const char* const* environ_block);

}  // namespace ptrun::env
