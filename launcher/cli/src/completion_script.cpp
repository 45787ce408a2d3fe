#include "ptrun/launcher/cli/completion_script.hpp"

#include "completion_options.hpp"
#include "ptrun/launcher/cli/info_option.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/cli/version.hpp"

namespace ptrun::launcher {
namespace detail {

std::vector<CompletionOption> completion_options() {
    std::vector<CompletionOption> out;
    for (const auto& info : info_option_table()) {
        CompletionOption option{
            info.dashed,     {},       info.kind == OptionKind::Value, info.words,
            ValueHint::Text, info.help};
        if (!info.short_name.empty()) option.spellings.emplace_back(info.short_name);
        option.spellings.push_back("--" + std::string(info.dashed));
        out.push_back(std::move(option));
    }
    for (const auto& spec : option_table()) {
        CompletionOption option{spec.dashed, {},        spec.kind == OptionKind::Value,
                                spec.words,  spec.hint, spec.help};
        if (!spec.short_name.empty()) option.spellings.emplace_back(spec.short_name);
        option.spellings.push_back("--" + std::string(spec.dashed));
        if (spec.underscored != spec.dashed)
            option.spellings.push_back("--" + std::string(spec.underscored));
        out.push_back(std::move(option));
    }
    return out;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
    std::string out;
    for (const auto& word : words) {
        if (!out.empty()) out += separator;
        out += word;
    }
    return out;
}

std::string wrapped(const std::vector<std::string>& words, std::string_view separator,
                    std::string_view line_break, std::size_t width) {
    std::string out;
    std::size_t line = 0;  // characters on the current line
    for (const auto& word : words) {
        if (!out.empty()) {
            const bool fits = line + separator.size() + word.size() <= width;
            out += fits ? separator : line_break;
            line = fits ? line + separator.size() : 0;
        }
        out += word;
        line += word.size();
    }
    return out;
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

}  // namespace detail

std::string completion_script(std::string_view shell) {
    const auto options = detail::completion_options();
    if (shell == "bash") return detail::bash_completion(options, kVersion);
    if (shell == "zsh") return detail::zsh_completion(options, kVersion);
    if (shell == "tcsh") return detail::tcsh_completion(options, kVersion);
    std::string known;
    const auto shells = info_option_spec(InfoOption::PrintCompletion).words;
    for (std::size_t i = 0; i < shells.size(); ++i) {
        known += (i == 0 ? "" : i + 1 == shells.size() ? " or " : ", ") + std::string(shells[i]);
    }
    throw UsageError("--print-completion '" + std::string(shell) + "': expected " + known);
}

}  // namespace ptrun::launcher
