// ptrun::ddp beats the launcher's heartbeat record by itself: every completed collective (so
// every DataParallel step) counts as progress, with no call in the worker's code.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "cpu_bootstrap.hpp"
#include "node_ranks.hpp"
#include "ptrun/ddp/data_parallel.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/init.hpp"
#include "ptrun/progress/heartbeat_file.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"

using namespace ptrun::ddp;
using ptrun::progress::HeartbeatFile;

namespace {

HeartbeatFile record(const std::string& name) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("ptrun-ddp-hb-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove(path);
    return HeartbeatFile::create(path.string(), 0);
}

}  // namespace

TEST_CASE("the run context carries PTRUN_HEARTBEAT_FILE", "[ddp][heartbeat]") {
    CHECK(run_context_from_env({}).heartbeat_file.empty());
    CHECK(run_context_from_env({{"PTRUN_HEARTBEAT_FILE", "/dev/shm/x"}}).heartbeat_file ==
          "/dev/shm/x");
}

TEST_CASE("a world-size-1 group beats on every collective and DataParallel step",
          "[ddp][heartbeat]") {
    auto file = record("single");
    RunContext ctx;
    ctx.heartbeat_file = file.path();
    auto pg = init_process_group(ctx, InitOptions{.backend = Backend::Cpu});
    std::vector<float> v{1, 2, 3};
    pg->allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Sum)->wait();
    pg->barrier()->wait();
    CHECK(file.read().count == 2);
    CHECK(file.read().writer_pid == ::getpid());

    std::vector<float> param(10, 1.0f), grad(10, 0.5f);
    DataParallel dp(*pg);
    dp.add_parameter("w", param.data(), grad.data(), param.size());
    dp.broadcast_parameters();  // the layout's allgather, then one broadcast
    const auto before = file.read().count;
    for (int step = 0; step < 3; ++step) {
        dp.mark_grad_ready(0);
        dp.finish();
        CHECK(file.read().count == before + static_cast<std::uint64_t>(step) + 1);
    }
}

TEST_CASE("a shared-memory group beats each rank's own record per completed collective",
          "[ddp][heartbeat]") {
    HeartbeatFile files[2] = {record("rank0"), record("rank1")};
    ptrun::rdzv::InMemoryStore store;
    const auto errors = testing::run_node_ranks(2, [&](const RunContext& ctx) {
        auto hb = std::make_shared<ptrun::progress::Heartbeat>(
            ptrun::progress::Heartbeat::open(files[ctx.rank].path()));
        auto pg = detail::bootstrap_cpu_group(ctx, store, std::chrono::seconds(60), {}, {}, hb);
        std::vector<double> big(1 << 16, 1.0);
        std::vector<std::int32_t> small{ctx.rank};
        for (int i = 0; i < 3; ++i) {
            pg->allreduce(big.data(), big.size(), DType::Float64, ReduceOp::Sum)->wait();
        }
        pg->allreduce(small.data(), 1, DType::Int32, ReduceOp::Max)->wait();
        pg->barrier()->wait();
        // An argument error is refused at the call: nothing completed, no beat.
        try {
            pg->broadcast(big.data(), 1, DType::Float64, 7);
        } catch (const CollectiveError&) {
            return;
        }
        throw std::logic_error("broadcast from rank 7 of 2 was accepted");
    });
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    for (auto& f : files) CHECK(f.read().count == 5);
}

TEST_CASE("an unusable heartbeat file fails the group naming it", "[ddp][heartbeat]") {
    RunContext ctx;
    ctx.heartbeat_file = "/nonexistent/ptrun-hb";
    CHECK_THROWS_WITH(
        init_process_group(ctx, InitOptions{.backend = Backend::Cpu}),
        Catch::Contains("init_process_group: PTRUN_HEARTBEAT_FILE='/nonexistent/ptrun-hb'"));
}
