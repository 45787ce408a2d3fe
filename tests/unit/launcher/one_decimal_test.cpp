// one_decimal_text against snprintf("%.1f") itself: ties, values just below and above them,
// subnormals, and random doubles spread over every exponent and over 0-1000.
#include "ptrun/launcher/output/one_decimal.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

using ptrun::launcher::one_decimal_text;

namespace {

std::string printf_text(double v) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace

TEST_CASE("one_decimal_text: ties go to the even tenth, as printf's", "[launcher][usage]") {
    CHECK(one_decimal_text(0.25) == "0.2");
    CHECK(one_decimal_text(0.75) == "0.8");
    CHECK(one_decimal_text(0.15) == "0.1");     // 0.1499999999999999944...
    CHECK(one_decimal_text(0.35) == "0.3");     // 0.3499999999999999778...
    CHECK(one_decimal_text(99.95) == "100.0");  // 99.9500000000000028...
    CHECK(one_decimal_text(0.0) == "0.0");
    CHECK(one_decimal_text(0.04999) == "0.0");
    CHECK(one_decimal_text(1023.5) == "1023.5");
    for (int k = 0; k < 40000; ++k) {  // every multiple of 1/20 and of 1/40 up to 2,000
        for (double v : {k / 20.0, k / 40.0}) {
            REQUIRE(one_decimal_text(v) == printf_text(v));
            const double below = std::nextafter(v, 0.0), above = std::nextafter(v, 1e300);
            REQUIRE(one_decimal_text(below) == printf_text(below));
            REQUIRE(one_decimal_text(above) == printf_text(above));
        }
    }
}

TEST_CASE("one_decimal_text: random doubles read as printf reads them", "[launcher][usage]") {
    std::mt19937_64 random(20261130);
    std::uniform_real_distribution<double> usual(0.0, 1000.0);
    for (int i = 0; i < 100000; ++i) {
        const double v = usual(random);
        REQUIRE(one_decimal_text(v) == printf_text(v));
    }
    for (int i = 0; i < 100000; ++i) {  // any bits of a finite, non-negative double
        const double v = std::abs(std::bit_cast<double>(random() & ~(std::uint64_t{1} << 63)));
        if (!std::isfinite(v)) continue;
        REQUIRE(one_decimal_text(v) == printf_text(v));
    }
    const double tiny = std::numeric_limits<double>::denorm_min();
    CHECK(one_decimal_text(tiny) == "0.0");
    CHECK(one_decimal_text(std::nextafter(0x1p50, 0.0)) ==
          printf_text(std::nextafter(0x1p50, 0.0)));
    CHECK(one_decimal_text(0x1p50) == printf_text(0x1p50));
    CHECK(one_decimal_text(-0.25) == "-0.2");  // printf's own path
    CHECK(one_decimal_text(-0.0) == "-0.0");
}
