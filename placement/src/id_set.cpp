#include "ptrun/placement/id_set.hpp"

#include <algorithm>
#include <charconv>

#include "ptrun/placement/placement_error.hpp"

namespace ptrun::placement {
namespace {

int id_of(std::string_view digits, std::string_view text) {
    int value = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || value < 0 ||
        value > kMaxId) {
        throw PlacementError("list '" + std::string(text) + "': '" + std::string(digits) +
                             "' is not an id from 0 to " + std::to_string(kMaxId));
    }
    return value;
}

}  // namespace

IdSet::IdSet(std::vector<int> ids) : ids_(std::move(ids)) {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
}

IdSet IdSet::range(int first, int last) {
    IdSet set;
    for (int i = first; i <= last; ++i) set.ids_.push_back(i);
    return set;
}

bool IdSet::contains(int id) const { return std::binary_search(ids_.begin(), ids_.end(), id); }

IdSet IdSet::operator&(const IdSet& other) const {
    IdSet out;
    std::set_intersection(ids_.begin(), ids_.end(), other.ids_.begin(), other.ids_.end(),
                          std::back_inserter(out.ids_));
    return out;
}

IdSet IdSet::operator|(const IdSet& other) const {
    IdSet out;
    std::set_union(ids_.begin(), ids_.end(), other.ids_.begin(), other.ids_.end(),
                   std::back_inserter(out.ids_));
    return out;
}

IdSet parse_id_list(std::string_view text) {
    constexpr std::string_view kSpace = " \t\n\r";
    auto first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return {};
    std::string_view rest = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
    std::vector<int> ids;
    while (true) {
        auto comma = rest.find(',');
        auto entry = rest.substr(0, comma);
        auto dash = entry.find('-');
        int lo = id_of(entry.substr(0, dash), text);
        int hi = dash == std::string_view::npos ? lo : id_of(entry.substr(dash + 1), text);
        if (hi < lo) {
            throw PlacementError("list '" + std::string(text) + "': range '" + std::string(entry) +
                                 "' runs backwards");
        }
        for (int i = lo; i <= hi; ++i) ids.push_back(i);
        if (ids.size() > static_cast<std::size_t>(kMaxId) + 1) {
            throw PlacementError("list '" + std::string(text) + "' names more than " +
                                 std::to_string(kMaxId + 1) + " ids");
        }
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return IdSet(std::move(ids));
}

std::string to_list(const IdSet& set) {
    std::string text;
    const auto& ids = set.ids();
    for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!text.empty()) text.push_back(',');
        text.append(std::to_string(ids[i]));
        if (j > i) text.append("-").append(std::to_string(ids[j]));
        i = j + 1;
    }
    return text;
}

}  // namespace ptrun::placement
