#include "ptrun/rendezvous/counter_text.hpp"

#include <catch2/catch.hpp>

using ptrun::rdzv::detail::parse_counter;

TEST_CASE("ADD counters are read as torch's store reads them", "[rdzv]") {
    CHECK(parse_counter("42") == 42);
    CHECK(parse_counter("  +7 trailing") == 7);
    CHECK(parse_counter("-3") == -3);
    CHECK_FALSE(parse_counter(""));
    CHECK_FALSE(parse_counter("x1"));
    CHECK_FALSE(parse_counter("99999999999999999999"));
}
