// An agent's RdzvSession against a real store server on loopback: the store going away.
#include "ptrun/launcher/membership/rdzv_session.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;

TEST_CASE("a session's lost callback may call back into the session", "[launcher][rdzv_session]") {
    ptrun::rdzv::TcpStoreServerOptions so;
    so.host = "127.0.0.1";
    auto server = std::make_unique<ptrun::rdzv::TcpStoreServer>(so);

    RdzvSessionOptions o;
    o.store = HostPort{"127.0.0.1", server->port()};
    o.keys = rdzv_keys("session-test");
    o.self.id = "node-a";
    o.self.hostname = "node-a";
    o.self.addr = "127.0.0.1";
    o.nnodes = NodeRange{1, 1};
    o.settings.join_timeout = 5s;
    o.settings.read_timeout = 2s;
    o.settings.heartbeat = 100ms;
    o.logger = std::make_shared<spdlog::logger>("session-test",
                                                std::make_shared<spdlog::sinks::null_sink_mt>());
    RdzvSession session(std::move(o));

    NodePlacement placement;
    placement.round = 1;
    placement.token = "0123456789abcdef";
    std::promise<std::string> reported;
    auto lost = reported.get_future();
    // The agent's reaction to a lost store may be to tell the coordinator (a session call).
    session.watch(
        placement, [](RoundEnd) {},
        [&](std::string message) {
            session.report_leaving(1, "store lost");
            reported.set_value(std::move(message));
        });
    server->stop();
    REQUIRE(lost.wait_for(20s) == std::future_status::ready);
    CHECK(lost.get().find("127.0.0.1") != std::string::npos);
}
