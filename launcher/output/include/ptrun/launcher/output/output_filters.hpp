#pragma once
/// --duplicate-stdout-filters / --duplicate-stderr-filters (torchrun 2.x): worker output lines
/// that contain any of the filters are also copied to a per-run file. Pure: parsing and
/// matching; the relay that writes the file is the caller's.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// The filters of an option value, torchrun's grammar: comma-separated substrings, ",," standing
/// for a comma inside one (read left to right: "a,,,b" is "a," and "b"). "" is no filter.
/// Unlike torchrun, which takes an empty entry as a filter that copies every line, an empty
/// entry ("a," or ",a") is refused. Throws UsageError naming `flag` and the value.
std::vector<std::string> parse_output_filters(std::string_view flag, std::string_view value);

/// True when `line` (without its newline) contains any of `filters`, byte for byte; false for
/// no filters.
bool matches_any_filter(std::string_view line, const std::vector<std::string>& filters);

/// Picks the matching lines out of a worker's output stream (the relay's filter logic): '\n'
/// ends a line; a line reaching `max_line` bytes is tested and passed on as a piece of its own,
/// so memory stays bounded.
class FilteredLines {
  public:
    FilteredLines(std::vector<std::string> filters, std::string prefix, std::size_t max_line);
    /// Appends each complete line of `data` that matches, prefixed and ended with '\n', to `out`;
    /// keeps the rest.
    void feed(const char* data, std::size_t size, std::string& out);
    /// Tests the held partial line, if any, as a last line.
    void finish(std::string& out);

  private:
    void take(std::string_view line, std::string& out);
    std::vector<std::string> filters_;
    std::string prefix_;
    std::size_t max_line_;
    std::string partial_;
};

}  // namespace ptrun::launcher
