#include "ptrun/ddp/init.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "cpu_bootstrap.hpp"
#include "node_ranks.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::ddp;

TEST_CASE("without a launcher the run context is world size 1", "[ddp]") {
    const RunContext ctx = run_context_from_env({});
    CHECK(ctx.rank == 0);
    CHECK(ctx.world_size == 1);
    CHECK(ctx.restart_count == 0);
}

TEST_CASE("the run context reads ptrun's variables", "[ddp]") {
    const RunContext ctx = run_context_from_env({{"RANK", "3"},
                                                 {"WORLD_SIZE", "4"},
                                                 {"LOCAL_RANK", "1"},
                                                 {"LOCAL_WORLD_SIZE", "2"},
                                                 {"GROUP_RANK", "1"},
                                                 {"MASTER_ADDR", "10.0.0.1"},
                                                 {"MASTER_PORT", "29400"},
                                                 {"TORCHELASTIC_RESTART_COUNT", "2"},
                                                 {"TORCHELASTIC_RUN_ID", "job7"}});
    CHECK(ctx.rank == 3);
    CHECK(ctx.world_size == 4);
    CHECK(ctx.local_rank == 1);
    CHECK(ctx.local_world_size == 2);
    CHECK(ctx.group_rank == 1);
    CHECK(ctx.master_addr == "10.0.0.1");
    CHECK(ctx.master_port == 29400);
    CHECK(ctx.restart_count == 2);
    CHECK(ctx.run_id == "job7");
}

TEST_CASE("a world-size-1 group runs every collective locally", "[ddp]") {
    auto pg = init_process_group(RunContext{}, InitOptions{.backend = Backend::Cpu});
    CHECK(pg->size() == 1);
    CHECK(pg->rank() == 0);
    std::vector<float> v{1, 2, 3};
    pg->allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Avg)->wait();
    CHECK(v == std::vector<float>{1, 2, 3});
    std::vector<std::int64_t> in{4, 5}, out(2);
    pg->allgather(in.data(), out.data(), 2, DType::Int64)->wait();
    CHECK(out == in);
    pg->reduce_scatter(in.data(), out.data(), 2, DType::Int64, ReduceOp::Sum)->wait();
    CHECK(out == in);
    pg->broadcast(v.data(), v.size(), DType::Float32, 0)->wait();
    pg->barrier()->wait();
    CHECK_THROWS_AS(pg->broadcast(v.data(), 3, DType::Float32, 1), CollectiveError);
}

TEST_CASE("unknown backends and missing store addresses are rejected", "[ddp]") {
    CHECK_THROWS_WITH(parse_backend("mpi"), Catch::Contains("unknown backend 'mpi'"));
    RunContext two;
    two.world_size = 2;
    CHECK_THROWS_WITH(init_process_group(two, InitOptions{.backend = Backend::Cpu}),
                      Catch::Contains("MASTER_ADDR"));
}

TEST_CASE("unknown shm_copy values are rejected naming the accepted ones", "[ddp]") {
    CHECK_THROWS_WITH(parse_shm_copy("fast"),
                      Catch::Contains("unknown shm_copy 'fast'") &&
                          Catch::Contains("auto, streamed, plain or single-copy"));
}

TEST_CASE("ranks of a node asking for different shm_copy fail naming both", "[ddp]") {
    ptrun::rdzv::InMemoryStore store;
    const auto errors = testing::run_node_ranks(2, [&](const RunContext& ctx) {
        const auto copy = ctx.rank == 0 ? std::optional<detail::CopyStrategy>{}
                                        : std::optional{detail::CopyStrategy::Plain};
        detail::bootstrap_cpu_group(ctx, store, std::chrono::milliseconds(500), copy);
    });
    // Rank 1 sees the leader's choice; the leader then times out waiting for it.
    REQUIRE(errors[1]);
    CHECK_THROWS_WITH(std::rethrow_exception(errors[1]),
                      Catch::Contains("shm_copy 'plain' differs from the node leader's 'auto'"));
    REQUIRE(errors[0]);
    CHECK_THROWS_AS(std::rethrow_exception(errors[0]), CollectiveTimeout);
}

TEST_CASE("a process's groups are told apart by name, and a name used twice is refused", "[ddp]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    // Catch's assertions are not thread-safe: ranks record, the main thread checks.
    std::vector<std::string> refusals(2);
    std::vector<std::int64_t> sums(2);
    const auto errors = testing::run_node_ranks(2, [&](RunContext ctx) {
        ctx.master_addr = "127.0.0.1";
        ctx.master_port = server.port();
        ctx.run_id = "names";
        const InitOptions world{.backend = Backend::Cpu, .timeout = std::chrono::seconds(60)};
        auto first = init_process_group(ctx, world);
        try {
            init_process_group(ctx, world);
        } catch (const CollectiveError& e) {
            refusals[static_cast<std::size_t>(ctx.rank)] = e.what();
        }
        InitOptions other = world;
        other.group_name = "second";
        auto second = init_process_group(ctx, other);
        std::int64_t v = ctx.rank + 1;
        second->allreduce(&v, 1, DType::Int64, ReduceOp::Sum)->wait();
        sums[static_cast<std::size_t>(ctx.rank)] = v;
        first->barrier()->wait();
    });
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    for (const auto& refusal : refusals) {
        CHECK_THAT(refusal, Catch::Contains("already made a group named 'world'") &&
                                Catch::Contains("InitOptions::group_name"));
    }
    CHECK(sums == std::vector<std::int64_t>{3, 3});
    InitOptions bad{.backend = Backend::Cpu};
    bad.group_name = "a/b";
    RunContext two;
    two.world_size = 2;
    two.master_addr = "127.0.0.1";
    two.master_port = server.port();
    CHECK_THROWS_WITH(init_process_group(two, bad), Catch::Contains("group_name 'a/b'"));
}
