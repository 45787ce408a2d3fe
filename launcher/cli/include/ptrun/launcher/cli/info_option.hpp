#pragma once
/// The options that print something and exit 0 instead of launching (--help, --version,
/// --print-completion): a table beside option_table(), for they have no PET_ variable and no
/// place in LaunchOptions. The parser, option prefixes and shell completion all read it.

#include <span>
#include <string_view>

#include "ptrun/launcher/cli/option.hpp"

namespace ptrun::launcher {

/// One enumerator per informational option, in --help order.
enum class InfoOption { Help, Version, PrintCompletion };

/// One informational option's row.
struct InfoOptionSpec {
    InfoOption key;
    std::string_view dashed;  ///< "print-completion" (no underscored spelling: torchrun has none)
    std::string_view short_name;  ///< "-h", or empty
    OptionKind kind;
    std::span<const std::string_view> words;  ///< the values it takes (the shells)
    std::string_view help;
};

/// Every informational option, one row each, in enumerator order.
std::span<const InfoOptionSpec> info_option_table();

/// The row of `key`.
const InfoOptionSpec& info_option_spec(InfoOption key);

}  // namespace ptrun::launcher
