#include "ptrun/launcher/cli/option_prefix.hpp"

#include <string_view>

#include "ptrun/launcher/cli/info_option.hpp"
#include "ptrun/launcher/cli/option.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

/// A long option ptrun knows: its spelling and whether a value follows it.
struct LongName {
    std::string_view name;
    const OptionSpec* spec;  ///< null for --help, --version and --print-completion
    OptionKind kind;
};

/// Every long spelling, each option's dashed one first.
std::vector<LongName> long_names() {
    std::vector<LongName> out;
    for (const auto& info : info_option_table()) out.push_back({info.dashed, nullptr, info.kind});
    for (const auto& spec : option_table()) {
        out.push_back({spec.dashed, &spec, spec.kind});
        if (spec.underscored != spec.dashed) out.push_back({spec.underscored, &spec, spec.kind});
    }
    return out;
}

bool takes_value(const OptionSpec* spec) { return spec && spec->kind == OptionKind::Value; }

}  // namespace

std::vector<std::string> expand_option_prefixes(std::vector<std::string> args) {
    const auto names = long_names();
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--" || arg.size() < 2 || arg[0] != '-') break;  // PROGRAM from here on
        if (arg[1] != '-') {                                        // -m, -r VALUE, -t VALUE
            for (const auto& spec : option_table()) {
                if (arg == spec.short_name && takes_value(&spec)) ++i;
            }
            continue;
        }
        const auto eq = arg.find('=');
        const std::string_view name = std::string_view(arg).substr(2, eq - 2);
        std::vector<const LongName*> matches;
        const LongName* exact = nullptr;
        for (const auto& n : names) {
            if (n.name == name) exact = &n;
            if (n.name.substr(0, name.size()) != name) continue;
            bool same_option = false;  // both spellings of one option are one candidate
            for (const auto* m : matches)
                same_option = same_option || (m->spec && m->spec == n.spec);
            if (!same_option) matches.push_back(&n);
        }
        if (exact == nullptr && matches.size() > 1) {
            std::string candidates;
            for (const auto* m : matches) {
                candidates += (candidates.empty() ? "--" : ", --") + std::string(m->name);
            }
            throw UsageError("ambiguous option '" + std::string(arg.substr(0, eq)) +
                             "': could match " + candidates + " (see ptrun --help)");
        }
        const LongName* found = exact ? exact : matches.empty() ? nullptr : matches.front();
        if (found == nullptr) break;  // unknown: the parser names it
        if (!exact) {
            args[i] = "--" + std::string(found->name) +
                      (eq == std::string::npos ? std::string() : arg.substr(eq));
        }
        if (found->kind == OptionKind::Value && eq == std::string::npos) ++i;
    }
    return args;
}

}  // namespace ptrun::launcher
