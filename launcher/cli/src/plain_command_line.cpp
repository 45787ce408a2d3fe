#include "ptrun/launcher/cli/plain_command_line.hpp"

#include <string_view>

namespace ptrun::launcher {
namespace {

/// The option whose spelling `word` is exactly ("--nproc-per-node", "--nproc_per_node", "-r").
const OptionSpec* spelled(std::string_view word) {
    for (const auto& spec : option_table()) {
        if (word == spec.short_name) return &spec;
        if (word.size() > 2 && word.substr(0, 2) == "--") {
            const auto name = word.substr(2);
            if (name == spec.dashed || name == spec.underscored) return &spec;
        }
    }
    return nullptr;
}

}  // namespace

std::optional<GivenOptions> parse_plain_command_line(const std::vector<std::string>& args) {
    GivenOptions out;
    std::size_t i = 0;
    for (; i < args.size(); ++i) {
        const std::string& word = args[i];
        if (word == "--") {
            ++i;
            break;
        }
        if (word.size() < 2 || word[0] != '-') break;  // PROGRAM
        const auto eq = word[1] == '-' ? word.find('=') : std::string::npos;
        const OptionSpec* spec = spelled(std::string_view(word).substr(0, eq));
        if (spec == nullptr) return std::nullopt;
        auto& value = out.values[static_cast<std::size_t>(spec->key)];
        if (spec->kind == OptionKind::Flag) {
            if (eq != std::string::npos) return std::nullopt;
            value = "1";
        } else if (eq != std::string::npos) {
            if (eq + 1 == word.size()) return std::nullopt;
            value = word.substr(eq + 1);
        } else {
            if (i + 1 == args.size() || args[i + 1].empty() || args[i + 1][0] == '-') {
                return std::nullopt;
            }
            value = args[++i];
        }
    }
    if (i == args.size()) return std::nullopt;  // no PROGRAM
    out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    return out;
}

}  // namespace ptrun::launcher
