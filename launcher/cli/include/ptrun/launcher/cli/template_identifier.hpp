#pragma once
/// The identifier of Python's string.Template, shared by the `${local_rank}` argument macro and
/// the line prefix template (header-only).

#include <cctype>
#include <cstddef>
#include <string_view>

namespace ptrun::launcher {

/// string.Template's identifier ((?a:[_a-z][_a-z0-9]*), case-insensitive) at `at` in `text`: its
/// length, 0 if none starts there.
inline std::size_t template_identifier(std::string_view text, std::size_t at) {
    auto is_start = [](char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); };
    auto is_part = [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); };
    if (at >= text.size() || !is_start(text[at])) return 0;
    std::size_t end = at + 1;
    while (end < text.size() && is_part(text[end])) ++end;
    return end - at;
}

}  // namespace ptrun::launcher
