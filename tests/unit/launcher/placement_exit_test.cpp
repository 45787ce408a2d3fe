#include "ptrun/launcher/membership/placement_exit.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;

namespace {

LaunchConfig task_config(std::uint16_t port) {
    LaunchConfig c;
    c.run_id = "slurm-9.0";
    c.master_addr = "127.0.0.1";
    c.master_port = port;
    return c;
}

FixedPlacement task(int rank) {
    FixedPlacement p;
    p.rank = rank;
    p.world_size = 3;
    p.hosts_store = rank == 0;
    return p;
}

std::shared_ptr<spdlog::logger> quiet() {
    return std::make_shared<spdlog::logger>("test",
                                            std::make_shared<spdlog::sinks::null_sink_st>());
}

}  // namespace

TEST_CASE("exit barrier: the store host waits until every other rank has ended",
          "[launcher][slurm]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    const auto port = server.port();
    auto host = std::async(std::launch::async, [&] {
        placement_exit_barrier(task_config(port), task(0), 0, quiet(), 20s);
    });
    placement_exit_barrier(task_config(port), task(1), 0, quiet());
    CHECK(host.wait_for(200ms) == std::future_status::timeout);      // one rank is still running
    placement_exit_barrier(task_config(port), task(2), 1, quiet());  // a failed rank counts out too
    CHECK(host.wait_for(10s) == std::future_status::ready);
    host.get();
}

TEST_CASE("exit barrier: a failed store host does not wait, nor does a timed-out one hang",
          "[launcher][slurm]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    auto t0 = std::chrono::steady_clock::now();
    placement_exit_barrier(task_config(server.port()), task(0), 1, quiet(), 20s);
    placement_exit_barrier(task_config(server.port()), task(0), 0, quiet(), 300ms);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    LaunchConfig no_port;  // no store to count out at: nothing to do
    placement_exit_barrier(no_port, task(1), 0, quiet());
}
