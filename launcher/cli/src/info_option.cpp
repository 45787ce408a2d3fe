#include "ptrun/launcher/cli/info_option.hpp"

#include <array>

namespace ptrun::launcher {
namespace {

/// The shells --print-completion writes a script for (completion_script.hpp).
constexpr std::array<std::string_view, 3> kShells{"bash", "zsh", "tcsh"};

constexpr std::array<InfoOptionSpec, 3> kInfoOptions{{
    {InfoOption::Help, "help", "-h", OptionKind::Flag, {}, "Print this help message and exit"},
    {InfoOption::Version, "version", "", OptionKind::Flag, {}, "Print the version and exit"},
    {InfoOption::PrintCompletion, "print-completion", "", OptionKind::Value, kShells,
     "Print the completion script for SHELL (bash, zsh or tcsh) and exit (man ptrun, SHELL "
     "COMPLETION)"},
}};

constexpr bool rows_in_enumerator_order() {
    for (std::size_t i = 0; i < kInfoOptions.size(); ++i) {
        if (static_cast<std::size_t>(kInfoOptions[i].key) != i) return false;
    }
    return true;
}
static_assert(rows_in_enumerator_order(), "kInfoOptions: one row per InfoOption, in order");

}  // namespace

std::span<const InfoOptionSpec> info_option_table() { return kInfoOptions; }

const InfoOptionSpec& info_option_spec(InfoOption key) {
    return kInfoOptions[static_cast<std::size_t>(key)];
}

}  // namespace ptrun::launcher
