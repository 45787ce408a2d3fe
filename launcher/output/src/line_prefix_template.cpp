#include "ptrun/launcher/output/line_prefix_template.hpp"

#include <utility>
#include <array>

#include "ptrun/launcher/cli/template_identifier.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::string_view kMacroList =
    "${role_name}, ${rank}, ${local_rank}, ${pid} or ${hostname} ($$ for a '$')";

}  // namespace

LinePrefixTemplate LinePrefixTemplate::parse(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, Macro>, 5> kMacros{{
        {"role_name", Macro::RoleName},
        {"rank", Macro::Rank},
        {"local_rank", Macro::LocalRank},
        {"pid", Macro::Pid},
        {"hostname", Macro::Hostname},
    }};
    auto macro_named = [&](std::string_view name, std::string_view as_written) {
        for (const auto& [known, macro] : kMacros) {
            if (name == known) return macro;
        }
        throw UsageError("unknown macro " + std::string(as_written) + ": expected " +
                         std::string(kMacroList));
    };
    LinePrefixTemplate t;
    t.text_ = std::string(text);
    Piece current;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] != '$') {
            current.literal.push_back(text[i++]);
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '$') {  // $$: an escaped $
            current.literal.push_back('$');
            i += 2;
            continue;
        }
        std::size_t n = 0;
        std::size_t next = 0;
        std::string_view name;
        if (i + 1 < text.size() && text[i + 1] == '{') {  // ${name}
            n = template_identifier(text, i + 2);
            if (n > 0 && i + 2 + n < text.size() && text[i + 2 + n] == '}') {
                name = text.substr(i + 2, n);
                next = i + 3 + n;
            }
        } else if ((n = template_identifier(text, i + 1)) > 0) {  // $name (the longest name)
            name = text.substr(i + 1, n);
            next = i + 1 + n;
        }
        if (name.empty()) {
            throw UsageError("the '$' at character " + std::to_string(i + 1) +
                             " starts no macro: expected " + std::string(kMacroList));
        }
        current.macro = macro_named(name, text.substr(i, next - i));
        t.pieces_.push_back(std::move(current));
        current = Piece{};
        i = next;
    }
    if (!current.literal.empty()) t.pieces_.push_back(std::move(current));
    return t;
}

std::string LinePrefixTemplate::expand(const LinePrefixFields& f) const {
    std::string out;
    for (const auto& piece : pieces_) {
        out += piece.literal;
        if (!piece.macro) continue;
        switch (*piece.macro) {
            case Macro::RoleName:
                out += f.role_name;
                break;
            case Macro::Rank:
                out += std::to_string(f.rank);
                break;
            case Macro::LocalRank:
                out += std::to_string(f.local_rank);
                break;
            case Macro::Pid:
                out += f.pid ? std::to_string(*f.pid) : "?";
                break;
            case Macro::Hostname:
                out += f.hostname;
                break;
        }
    }
    return out;
}

bool LinePrefixTemplate::uses_pid() const {
    for (const auto& piece : pieces_) {
        if (piece.macro == Macro::Pid) return true;
    }
    return false;
}

}  // namespace ptrun::launcher
