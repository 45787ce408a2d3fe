#include "ptrun/launcher/output/one_decimal.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>

namespace ptrun::launcher {

std::string one_decimal_text(double v) {
    // Not negative (-0.0 included), below 2^50 (so 10 times the significand fits 64 bits with
    // the shift below), a number: exact integer arithmetic. Anything else goes to printf itself.
    const auto bits = std::bit_cast<std::uint64_t>(v);
    if ((bits >> 63) != 0 || !(v < 0x1p50)) {
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.1f", v);
        return buf;
    }
    const auto biased = static_cast<int>((bits >> 52) & 0x7ff);
    std::uint64_t significand = bits & ((std::uint64_t{1} << 52) - 1);
    int exponent = -1074;  // subnormal (or zero): significand * 2^-1074
    if (biased != 0) {
        significand |= std::uint64_t{1} << 52;
        exponent = biased - 1075;
    }
    // 10 v = (10 * significand) * 2^exponent, and exponent < 0 below 2^52.
    const std::uint64_t scaled = significand * 10;  // < 2^57
    const int shift = -exponent;
    std::uint64_t tenths = 0;
    if (shift < 64) {
        tenths = scaled >> shift;
        const std::uint64_t rest = scaled & ((std::uint64_t{1} << shift) - 1);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rest > half || (rest == half && (tenths & 1) != 0)) ++tenths;
    }  // else 10 v < 2^57 * 2^-64: below a half, 0.0
    return std::to_string(tenths / 10) + "." + static_cast<char>('0' + tenths % 10);
}

}  // namespace ptrun::launcher
