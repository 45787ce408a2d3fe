#include "ptrun/launcher/plan/local_rank_macro.hpp"

#include "ptrun/launcher/cli/template_identifier.hpp"

namespace ptrun::launcher {

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
            const auto n = template_identifier(arg, i + 2);
            const auto close = i + 2 + n;
            if (n > 0 && close < arg.size() && arg[close] == '}') {
                out += arg.substr(i + 2, n) == kName ? value : std::string(arg.substr(i, n + 3));
                i = close + 1;
                continue;
            }
        } else if (const auto n = template_identifier(arg, i + 1);
                   n > 0) {  // $name (the longest name)
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
