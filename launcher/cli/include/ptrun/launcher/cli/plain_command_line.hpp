#pragma once
/// The usual command line read straight from ptrun's option table, without building CLI11's
/// (~0.2 ms of every launch: bench/RESULTS.md, "launch, part by part"). Anything unusual is left
/// to CLI11, which parses it and names what is wrong.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/cli/option.hpp"

namespace ptrun::launcher {

/// Each option's last value on the command line ("1" for a flag; nullopt: not given), and the
/// words from PROGRAM on.
struct GivenOptions {
    std::array<std::optional<std::string>, kOptionCount> values;
    std::vector<std::string> rest;
};

/// `args` (after expand_option_prefixes) as CLI11 reads them, where every word before PROGRAM
/// (or before `--`) is a whole option of the table: a flag alone, a value option with `=VALUE`
/// or followed by a VALUE that does not start with '-'. nullopt for anything else (--help,
/// --version, --print-completion, an unknown or abbreviated word, a flag given a value, a value
/// missing or empty, no PROGRAM): the caller then asks CLI11.
std::optional<GivenOptions> parse_plain_command_line(const std::vector<std::string>& args);

}  // namespace ptrun::launcher
