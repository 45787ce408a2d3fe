#include "ptrun/launcher/membership/node_placement.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;

namespace {

NodeInfo node(std::string id, int nproc) {
    NodeInfo n;
    n.id = std::move(id);
    n.hostname = n.id;
    n.nproc = nproc;
    return n;
}

}  // namespace

TEST_CASE("node placement: each member gets its group rank and rank base in order",
          "[launcher][round]") {
    RoundAssignment a;
    a.round = 2;
    a.restart_count = 1;
    a.members = {node("a", 2), node("b", 4), node("c", 1)};
    a.master_addr = "10.0.0.1";
    a.master_port = 29400;
    auto p = placements(a);
    REQUIRE(p.size() == 3);
    CHECK(p[0] == NodePlacement{2, 1, 0, 3, 0, 7, "10.0.0.1", 29400, "", {}});
    CHECK(p[1].rank_base == 2);
    CHECK(p[2].rank_base == 6);
    CHECK(p[2].group_rank == 2);
}

TEST_CASE("node placement: survives the trip through the store, rejects malformed records",
          "[launcher][round]") {
    NodePlacement p{3, 0, 1, 2, 4, 8, "fd77::10", 29500, "0123abcd", {"node x is lost"}};
    CHECK(decode_placement(encode(p)) == p);
    CHECK_THROWS_AS(decode_placement("7"), std::runtime_error);
    CHECK_THROWS_AS(decode_placement(R"({"round":1})"), std::runtime_error);
    auto out_of_range = p;
    out_of_range.group_rank = 2;
    CHECK_THROWS_AS(decode_placement(encode(out_of_range)), std::runtime_error);
}

TEST_CASE("placement: numbers that are no integer of the field's type are refused",
          "[launcher][placement-record]") {
    NodePlacement p;
    p.nodes = 1;
    p.world_size = 1;
    p.master_addr = "h";
    const auto good = encode(p);
    CHECK(decode_placement(good) == p);
    for (auto [from, to] : {std::pair{"\"round\":0", "\"round\":1e30"},
                            std::pair{"\"master_port\":0", "\"master_port\":65536"},
                            std::pair{"\"group_rank\":0", "\"group_rank\":0.5"}}) {
        auto bad = good;
        const auto at = bad.find(from);
        REQUIRE(at != std::string::npos);
        bad.replace(at, std::string(from).size(), to);
        CHECK_THROWS_WITH(decode_placement(bad), Catch::StartsWith("malformed placement record"));
    }
}
