#include "ptrun/launcher/cli/memory_size.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

namespace ptrun::launcher {

std::optional<std::uint64_t> parse_memory_size(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
        ++digits;
    }
    if (digits == 0 || text[0] == '.') return std::nullopt;
    const std::string number(text.substr(0, digits));
    // strtod, not std::from_chars: libstdc++'s floating from_chars needs libm (fesetround), and
    // ptrun links no libm (a shared library fewer to load at every launch). ptrun never sets
    // a locale: the decimal point is '.'.
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return std::nullopt;
    std::string unit;
    for (char c : text.substr(digits))
        unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    double scale = 1;
    if (!unit.empty() && unit != "B") {
        const std::string_view prefixes = "KMGT";
        const auto at = prefixes.find(unit[0]);
        const std::string rest = unit.substr(1);
        if (at == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB")) {
            return std::nullopt;
        }
        for (std::size_t i = 0; i <= at; ++i) scale *= 1024;
    }
    const double bytes = value * scale;
    if (bytes < 1 || bytes > 4.611686018427388e18) return std::nullopt;  // 2^62
    return static_cast<std::uint64_t>(bytes);
}

}  // namespace ptrun::launcher
