#pragma once
/// `ptrun --print-completion SHELL`: the shell completion script, generated from the option
/// tables (option_table(), info_option_table()), so that it never lags behind the parser.

#include <string>
#include <string_view>

namespace ptrun::launcher {

/// The completion script for `shell` (bash, zsh or tcsh: info_option_spec(PrintCompletion)'s
/// words): every spelling of every option, the words of options whose values are words,
/// directory names for directories, and after the program the program's own completion. Throws
/// UsageError naming `shell` and the shells ptrun knows for any other.
std::string completion_script(std::string_view shell);

}  // namespace ptrun::launcher
