#include "ptrun/env/rank_info.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::env;

TEST_CASE("rank_info_from_env without a launcher is world size 1", "[env]") {
    auto info = rank_info_from_env({});
    CHECK(info.world_size == 1);
    CHECK(info.rank == 0);
    CHECK_FALSE(info.launched);
}

TEST_CASE("rank_info_from_env reads the launcher's variables", "[env]") {
    auto info = rank_info_from_env({{"RANK", "2"},
                                    {"WORLD_SIZE", "4"},
                                    {"LOCAL_RANK", "0"},
                                    {"LOCAL_WORLD_SIZE", "2"},
                                    {"GROUP_RANK", "1"},
                                    {"TORCHELASTIC_RESTART_COUNT", "3"},
                                    {"MASTER_ADDR", "h"},
                                    {"MASTER_PORT", "1234"},
                                    {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
    CHECK(info.launched);
    CHECK(info.rank == 2);
    CHECK(info.world_size == 4);
    CHECK(info.group_rank == 1);
    CHECK(info.restart_count == 3);
    CHECK(info.master_addr == "h");
    CHECK(info.master_port == 1234);
    CHECK(info.use_agent_store);
}

TEST_CASE("rank_info_from_env rejects bad values by name", "[env]") {
    CHECK_THROWS_WITH(rank_info_from_env({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
                      Catch::Contains("RANK='4'"));
    CHECK_THROWS_WITH(rank_info_from_env({{"MASTER_PORT", "70000"}}),
                      Catch::Contains("MASTER_PORT='70000'"));
    CHECK_THROWS_WITH(rank_info_from_env({{"WORLD_SIZE", "two"}}),
                      Catch::Contains("WORLD_SIZE='two'"));
}

TEST_CASE("rank_info_from_env reads the whole place, GROUP_WORLD_SIZE included", "[env]") {
    auto info = rank_info_from_env({{"RANK", "5"},
                                    {"WORLD_SIZE", "8"},
                                    {"LOCAL_RANK", "1"},
                                    {"LOCAL_WORLD_SIZE", "4"},
                                    {"GROUP_RANK", "1"},
                                    {"GROUP_WORLD_SIZE", "2"}});
    CHECK(info.place() == RankPlace{.rank = 5,
                                    .local_rank = 1,
                                    .world_size = 8,
                                    .local_world_size = 4,
                                    .group_rank = 1,
                                    .group_world_size = 2});
    CHECK(rank_info_from_env({}).group_world_size == 1);
    CHECK_THROWS_WITH(rank_info_from_env({{"GROUP_WORLD_SIZE", "0"}}),
                      Catch::Contains("GROUP_WORLD_SIZE='0'"));
}
