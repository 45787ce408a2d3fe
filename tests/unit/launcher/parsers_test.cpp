#include <catch2/catch.hpp>

#include "ptrun/launcher/host_facts.hpp"
#include "ptrun/launcher/node_range.hpp"
#include "ptrun/launcher/rdzv_conf.hpp"
#include "ptrun/launcher/usage_error.hpp"

using namespace ptrun::launcher;

TEST_CASE("node range: N and MIN:MAX", "[launcher][parse]") {
    CHECK(parse_node_range("1") == NodeRange{1, 1});
    CHECK(parse_node_range("2:4") == NodeRange{2, 4});
    CHECK_THROWS_WITH(parse_node_range("3:2"), Catch::Contains("MIN 3 is greater than MAX 2"));
    CHECK_THROWS_WITH(parse_node_range("0"), Catch::Contains("--nnodes '0'"));
    CHECK_THROWS_AS(parse_node_range("1:"), UsageError);
    CHECK_THROWS_AS(parse_node_range(":2"), UsageError);
    CHECK_THROWS_AS(parse_node_range("a"), UsageError);
}

TEST_CASE("rdzv conf: key=value pairs", "[launcher][parse]") {
    auto conf = parse_rdzv_conf("join_timeout=900,is_host=1,empty=");
    CHECK(conf.at("join_timeout") == "900");
    CHECK(conf.at("is_host") == "1");
    CHECK(conf.at("empty").empty());
    CHECK(parse_rdzv_conf("").empty());
    CHECK_THROWS_WITH(parse_rdzv_conf("a=1,b"), Catch::Contains("item 'b'"));
    CHECK_THROWS_AS(parse_rdzv_conf("=1"), UsageError);
}

TEST_CASE("visible devices count", "[launcher][parse]") {
    CHECK(count_visible_devices("") == 0);
    CHECK(count_visible_devices("0") == 1);
    CHECK(count_visible_devices("0,1,2") == 3);
    CHECK(count_visible_devices("-1") == 0);
    CHECK(count_visible_devices("GPU-1234,GPU-5678") == 2);
}
