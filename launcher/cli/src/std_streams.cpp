#include "ptrun/launcher/cli/std_streams.hpp"

#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

[[noreturn]] void bad(std::string_view flag, std::string_view text) {
    throw UsageError(std::string(flag) + " '" + std::string(text) +
                     "': expected 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:0-3,...");
}

StdMask mask(std::string_view part, std::string_view flag, std::string_view text) {
    auto v = env::parse_int(part);
    if (!v || *v < 0 || *v > 3) bad(flag, text);
    return static_cast<StdMask>(*v);
}

}  // namespace

StdMask StdSpec::for_rank(int local_rank) const {
    if (!mapped_) return all_;
    auto it = per_rank_.find(local_rank);
    return it == per_rank_.end() ? StdMask::None : it->second;
}

bool StdSpec::none() const {
    if (!mapped_) return all_ == StdMask::None;
    for (const auto& [rank, m] : per_rank_) {
        if (m != StdMask::None) return false;
    }
    return true;
}

StdSpec parse_std_spec(std::string_view text, std::string_view flag) {
    if (text.find(':') == std::string_view::npos) return StdSpec(mask(text, flag, text));
    std::map<int, StdMask> per_rank;
    std::string_view rest = text;
    while (true) {
        auto comma = rest.find(',');
        auto item = rest.substr(0, comma);
        auto colon = item.find(':');
        if (colon == std::string_view::npos) bad(flag, text);
        auto rank = env::parse_int(item.substr(0, colon));
        if (!rank || *rank < 0 || *rank > 1'000'000) bad(flag, text);
        per_rank[static_cast<int>(*rank)] = mask(item.substr(colon + 1), flag, text);
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return StdSpec(std::move(per_rank));
}

}  // namespace ptrun::launcher
