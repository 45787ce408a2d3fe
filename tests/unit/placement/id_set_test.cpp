#include "ptrun/placement/id_set.hpp"

#include <catch2/catch.hpp>

#include "ptrun/placement/placement_error.hpp"

using namespace ptrun::placement;

TEST_CASE("id lists read as the kernel writes them", "[placement]") {
    CHECK(parse_id_list("0-3,8,10-11\n") == IdSet({0, 1, 2, 3, 8, 10, 11}));
    CHECK(parse_id_list("5") == IdSet({5}));
    CHECK(parse_id_list("").empty());
    CHECK(parse_id_list("\n").empty());
    CHECK(parse_id_list("3,1,1-2") == IdSet({1, 2, 3}));
}

TEST_CASE("id lists refuse malformed text, naming it", "[placement]") {
    CHECK_THROWS_WITH(parse_id_list("3-1"), "list '3-1': range '3-1' runs backwards");
    CHECK_THROWS_WITH(parse_id_list("a"), "list 'a': 'a' is not an id from 0 to 65535");
    CHECK_THROWS_AS(parse_id_list("1,,2"), PlacementError);
    CHECK_THROWS_AS(parse_id_list("-1"), PlacementError);
    CHECK_THROWS_AS(parse_id_list("0-70000"), PlacementError);
    CHECK_THROWS_AS(parse_id_list("1-"), PlacementError);
}

TEST_CASE("id sets print as the shortest list", "[placement]") {
    CHECK(to_list(IdSet({0, 1, 2, 3, 8, 10, 11})) == "0-3,8,10-11");
    CHECK(to_list(IdSet({7})) == "7");
    CHECK(to_list(IdSet()) == "");
    CHECK(to_list(IdSet::range(112, 125) | IdSet::range(0, 13)) == "0-13,112-125");
    CHECK(to_list(parse_id_list("0-55,112-167") & parse_id_list("50-120")) == "50-55,112-120");
}
