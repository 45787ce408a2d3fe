#include "ptrun/rendezvous/counter_text.hpp"

#include <cctype>
#include <charconv>

namespace ptrun::rdzv::detail {

std::optional<std::int64_t> parse_counter(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == '+') ++i;
    std::int64_t value = 0;
    const char* begin = text.data() + i;
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec != std::errc{} || end == begin) return std::nullopt;
    return value;
}

}  // namespace ptrun::rdzv::detail
