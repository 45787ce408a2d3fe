#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/node_range.hpp"
#include "ptrun/launcher/cli/rdzv_conf.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/host_facts.hpp"

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

TEST_CASE("host facts count the devices CUDA_VISIBLE_DEVICES shows as CUDA does",
          "[launcher][parse]") {
    auto gpus = [](const char* value) {
        return read_host_facts({{"CUDA_VISIBLE_DEVICES", value}}).gpus.size();
    };
    CHECK(gpus("0,1") == 2);
    CHECK(gpus("NoDevFiles") == 0);  // SLURM's value for a job without GPUs: none, not 1
    CHECK(gpus("0,1,-1,2") == 2);    // CUDA stops at -1: devices 0 and 1
    CHECK(gpus("") == 0);
    CHECK(gpus("0,0") == 0);  // a repeated device hides every device
}
