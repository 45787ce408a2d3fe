#include "ptrun/launcher/output_filters.hpp"

#include <algorithm>

#include "ptrun/launcher/usage_error.hpp"

namespace ptrun::launcher {

std::vector<std::string> parse_output_filters(std::string_view flag, std::string_view value) {
    std::vector<std::string> filters;
    if (value.empty()) return filters;
    std::string current;
    auto finish = [&] {
        if (current.empty()) {
            throw UsageError("--" + std::string(flag) + " '" + std::string(value) + "': filter " +
                             std::to_string(filters.size() + 1) +
                             " is empty and would copy every line (write ',,' for a comma in a "
                             "filter)");
        }
        filters.push_back(std::move(current));
        current.clear();
    };
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] != ',') {
            current.push_back(value[i]);
        } else if (i + 1 < value.size() && value[i + 1] == ',') {
            current.push_back(',');
            ++i;
        } else {
            finish();
        }
    }
    finish();
    return filters;
}

bool matches_any_filter(std::string_view line, const std::vector<std::string>& filters) {
    return std::any_of(filters.begin(), filters.end(), [&](const std::string& f) {
        return line.find(f) != std::string_view::npos;
    });
}

}  // namespace ptrun::launcher
