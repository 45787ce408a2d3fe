#include "ptrun/launcher/plan/local_rank_macro.hpp"

#include <cctype>

namespace ptrun::launcher {
namespace {

/// Template's identifier ((?a:[_a-z][_a-z0-9]*), case-insensitive): its length at `at`, 0 if none.
std::size_t identifier(std::string_view text, std::size_t at) {
    auto is_start = [](char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); };
    auto is_part = [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); };
    if (at >= text.size() || !is_start(text[at])) return 0;
    std::size_t end = at + 1;
    while (end < text.size() && is_part(text[end])) ++end;
    return end - at;
}

}  // namespace

std::string substitute_local_rank(std::string_view arg, int local_rank) {
    static constexpr std::string_view kName = "local_rank";
    const std::string value = std::to_string(local_rank);
    std::string out;
    out.reserve(arg.size());
    for (std::size_t i = 0; i < arg.size();) {
        if (arg[i] != '$') {
            out.push_back(arg[i++]);
            continue;
        }
        if (i + 1 < arg.size() && arg[i + 1] == '$') {  // $$: an escaped $
            out.push_back('$');
            i += 2;
            continue;
        }
        if (i + 1 < arg.size() && arg[i + 1] == '{') {  // ${name}
            const auto n = identifier(arg, i + 2);
            const auto close = i + 2 + n;
            if (n > 0 && close < arg.size() && arg[close] == '}') {
                out += arg.substr(i + 2, n) == kName ? value : std::string(arg.substr(i, n + 3));
                i = close + 1;
                continue;
            }
        } else if (const auto n = identifier(arg, i + 1); n > 0) {  // $name (the longest name)
            out += arg.substr(i + 1, n) == kName ? value : std::string(arg.substr(i, n + 1));
            i += n + 1;
            continue;
        }
        out.push_back('$');  // invalid: left as it is
        ++i;
    }
    return out;
}

}  // namespace ptrun::launcher
