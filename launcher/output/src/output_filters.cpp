#include "ptrun/launcher/output/output_filters.hpp"

#include <algorithm>

#include "ptrun/launcher/cli/usage_error.hpp"

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

FilteredLines::FilteredLines(std::vector<std::string> filters, std::string prefix,
                             std::size_t max_line)
    : filters_(std::move(filters)), prefix_(std::move(prefix)), max_line_(max_line) {}

void FilteredLines::take(std::string_view line, std::string& out) {
    if (!matches_any_filter(line, filters_)) return;
    out += prefix_;
    out += line;
    out += '\n';
}

void FilteredLines::feed(const char* data, std::size_t size, std::string& out) {
    std::string_view rest(data, size);
    while (!rest.empty()) {
        auto newline = rest.find('\n');
        auto room = max_line_ > partial_.size() ? max_line_ - partial_.size() : 0;
        if (newline == std::string_view::npos && rest.size() < room) {
            partial_.append(rest);
            return;
        }
        auto piece = std::min(newline, room);
        if (partial_.empty()) {
            take(rest.substr(0, piece), out);
        } else {
            partial_.append(rest.substr(0, piece));
            take(partial_, out);
            partial_.clear();
        }
        rest.remove_prefix(piece == newline ? piece + 1 : piece);
    }
}

void FilteredLines::finish(std::string& out) {
    if (partial_.empty()) return;
    take(partial_, out);
    partial_.clear();
}

}  // namespace ptrun::launcher
