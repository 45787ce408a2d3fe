#include "ptrun/launcher/output/duration_text.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;
using namespace std::chrono_literals;

TEST_CASE("seconds_text speaks in seconds, as the options take them", "[launcher][duration]") {
    CHECK(seconds_text(10'000ms) == "10 s");
    CHECK(seconds_text(500ms) == "0.5 s");
    CHECK(seconds_text(2'250ms) == "2.25 s");
    CHECK(seconds_text(50ms) == "0.05 s");
    CHECK(seconds_text(999ms) == "1 s");
    CHECK(seconds_text(0ms) == "0 s");
}

TEST_CASE("elapsed_text rounds down to the largest unit that reads well", "[launcher][duration]") {
    CHECK(elapsed_text(45s) == "45 s");
    CHECK(elapsed_text(300s) == "5 min");
    CHECK(elapsed_text(3'900s) == "1 h 5 min");
    CHECK(elapsed_text(7'200s) == "2 h");
}
