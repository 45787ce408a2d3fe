// utc_fields: the calendar fields gmtime_r gives, without the C library's time zone code.
#include "ptrun/launcher/output/utc_fields.hpp"

#include <catch2/catch.hpp>
#include <ctime>
#include <random>

using namespace ptrun::launcher;
using namespace std::chrono;

TEST_CASE("utc_fields agrees with gmtime_r, milliseconds included", "[launcher][utc_fields]") {
    const auto epoch = utc_fields(system_clock::time_point{});
    CHECK(epoch.year == 1970);
    CHECK(epoch.month == 1);
    CHECK(epoch.day == 1);
    CHECK(epoch.hour + epoch.minute + epoch.second + epoch.millisecond == 0);
    const auto leap =
        utc_fields(system_clock::time_point{seconds{951'782'400} + milliseconds{123}});
    CHECK((leap.year == 2000 && leap.month == 2 && leap.day == 29 && leap.millisecond == 123));

    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::int64_t> ms(0, 4'102'444'800'000);  // to 2100
    for (int i = 0; i < 2000; ++i) {
        const std::int64_t at = ms(rng);
        const auto t = utc_fields(system_clock::time_point{milliseconds{at}});
        const std::time_t secs = static_cast<std::time_t>(at / 1000);
        std::tm tm{};
        ::gmtime_r(&secs, &tm);
        INFO(at);
        REQUIRE(t.year == tm.tm_year + 1900);
        REQUIRE(t.month == static_cast<unsigned>(tm.tm_mon + 1));
        REQUIRE(t.day == static_cast<unsigned>(tm.tm_mday));
        REQUIRE(t.hour == static_cast<unsigned>(tm.tm_hour));
        REQUIRE(t.minute == static_cast<unsigned>(tm.tm_min));
        REQUIRE(t.second == static_cast<unsigned>(tm.tm_sec));
        REQUIRE(t.millisecond == static_cast<unsigned>(at % 1000));
    }
}
