#include "shm_layout.hpp"

#include <catch2/catch.hpp>

#include "ptrun/ddp/errors.hpp"
#include "shm_segment.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

TEST_CASE("control blocks sit on their own cache lines, slots on pages", "[ddp]") {
    STATIC_REQUIRE(sizeof(RankControl) % 128 == 0);
    STATIC_REQUIRE(sizeof(ShmHeader) % 128 == 0);
    CHECK(control_offset(1) - control_offset(0) == sizeof(RankControl));
    for (int n : {1, 2, 3, 4, 64}) {
        CHECK(slots_offset(n) % kPageBytes == 0);
        CHECK(slots_offset(n) >= control_offset(n));
        CHECK(slot_offset(n, 1, 8192) - slot_offset(n, 0, 8192) == 8192);
        CHECK(segment_bytes(n, 8192) == slots_offset(n) + static_cast<std::size_t>(n) * 8192);
    }
}

TEST_CASE("step_reached compares across the 32-bit wrap", "[ddp]") {
    CHECK(step_reached(5, 5));
    CHECK(step_reached(6, 5));
    CHECK_FALSE(step_reached(4, 5));
    CHECK(step_reached(2, 0xFFFFFFFEu));
    CHECK_FALSE(step_reached(0xFFFFFFFEu, 2));
}

TEST_CASE("a segment is shared between mappings and its name can be unlinked early", "[ddp]") {
    const std::string name = "/ptrun-ddp-unit-" + std::to_string(::getpid());
    SharedSegment a = SharedSegment::create(name, 8192);
    SharedSegment b = SharedSegment::open(name, 8192);
    static_cast<char*>(a.data())[4096] = 42;
    CHECK(static_cast<char*>(b.data())[4096] == 42);
    a.unlink();
    CHECK_THROWS_AS(SharedSegment::open(name, 8192), CollectiveError);
    static_cast<char*>(b.data())[1] = 7;
    CHECK(static_cast<char*>(a.data())[1] == 7);
}

TEST_CASE("creating an existing segment name fails with the name in the message", "[ddp]") {
    const std::string name = "/ptrun-ddp-unit-dup-" + std::to_string(::getpid());
    SharedSegment a = SharedSegment::create(name, 4096);
    CHECK_THROWS_WITH(SharedSegment::create(name, 4096), Catch::Contains(name));
}
