// The store host's Coordinator thread against a real store server on loopback: what it does
// when its connection to the store is lost.
#include "ptrun/launcher/membership/coordinator.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/rdzv_events.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<ptrun::rdzv::TcpStoreServer> serve_on(std::uint16_t port) {
    ptrun::rdzv::TcpStoreServerOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    return std::make_unique<ptrun::rdzv::TcpStoreServer>(o);
}

ptrun::rdzv::TcpStoreClient client_of(std::uint16_t port) {
    ptrun::rdzv::TcpStoreClientOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.connect_timeout = 10s;
    return ptrun::rdzv::TcpStoreClient(o);
}

/// Node `id`'s join event, as its agent pushes it onto the coordinator's queue.
void push_join(ptrun::rdzv::TcpStoreClient& c, const RdzvKeys& keys, const std::string& id) {
    JoinEvent e;
    e.node.id = id;
    e.node.hostname = "host-" + id;
    e.node.addr = "127.0.0.1";
    e.node.nproc = 1;
    e.seq = 1;
    c.queue_push(keys.events(), encode(RdzvEvent{e}));
}

/// A coordinator of a --nnodes NODES job on the store at `port` (master: that store).
CoordinatorOptions options_for(std::uint16_t port, const RdzvKeys& keys, int nodes) {
    CoordinatorOptions co;
    co.store = HostPort{"127.0.0.1", port};
    co.keys = keys;
    co.policy.min_nodes = nodes;
    co.policy.max_nodes = nodes;
    co.policy.last_call = 1s;
    co.policy.lost_after = 60s;
    co.policy.master_addr = "127.0.0.1";
    co.policy.master_port = port;
    co.heartbeat = 200ms;
    co.logger = std::make_shared<spdlog::logger>("coord-test",
                                                 std::make_shared<spdlog::sinks::null_sink_mt>());
    return co;
}

}  // namespace

TEST_CASE("the coordinator keeps serving after its store connection is lost",
          "[launcher][coordinator]") {
    auto first = serve_on(0);
    const std::uint16_t port = first->port();
    const RdzvKeys keys = rdzv_keys("coord-test");

    Coordinator coordinator(options_for(port, keys, 2));

    {  // a first node joins: the coordinator publishes the count
        auto c = client_of(port);
        push_join(c, keys, "a");
        CHECK(c.get(keys.status(), 10s) == "1");
    }
    // The store goes away under the coordinator (its blocked pop fails with ConnectionLost),
    // and a store listens on the same port again.
    first->stop();
    first.reset();
    auto second = serve_on(port);

    // The second node's join is served: the round closes and both are admitted.
    auto c = client_of(port);
    push_join(c, keys, "b");
    CHECK_NOTHROW(c.get(keys.admit("b", 1), 20s));
}

TEST_CASE("only the round's members report: a spare's or a forger's report is dropped",
          "[launcher][coordinator]") {
    // Issue 35.8 and 35.6: without a key, a raw client reported a timeline under an id that is
    // no member (a forged ready line and trace.json nodes); a spare's status was a second node.
    auto server = serve_on(0);
    const std::uint16_t port = server->port();
    const RdzvKeys keys = rdzv_keys("report-test");
    std::mutex mu;
    std::condition_variable got;
    std::vector<std::string> reported;
    auto co = options_for(port, keys, 1);
    co.on_report = [&](NodeReport r) {
        std::lock_guard lock(mu);
        reported.push_back(r.id + " " + std::to_string(r.round));
        got.notify_all();
    };
    Coordinator coordinator(std::move(co));
    auto c = client_of(port);
    push_join(c, keys, "a");
    REQUIRE_NOTHROW(c.get(keys.admit("a", 1), 20s));  // round 0: a alone
    push_join(c, keys, "spare");                      // waits as a spare
    auto report = [&](const std::string& id, int round) {
        NodeReport r{ReportKind::Timeline, round, id, "{}"};
        c.queue_push(keys.events(), encode(RdzvEvent{r}));
    };
    report("forged", 0);  // no node of the job
    report("spare", 0);   // a spare is no member
    report("a", 7);       // a member, of no round that ran
    report("a", 0);       // the one that counts
    std::unique_lock lock(mu);
    REQUIRE(got.wait_for(lock, 20s, [&] { return !reported.empty(); }));
    CHECK(reported == std::vector<std::string>{"a 0"});
}

TEST_CASE("with leases (etcd), a join whose node has no alive key is dropped, the others admitted",
          "[launcher][coordinator]") {
    // The alive keys of a batch of joins are read at once; only a batch with a missing one is
    // sorted out node by node.
    auto server = serve_on(0);
    const std::uint16_t port = server->port();
    const RdzvKeys keys = rdzv_keys("lease-test");
    auto co = options_for(port, keys, 2);
    co.state_key = keys.coordinator_state();
    co.self_id = "coordinator";
    auto c = client_of(port);
    c.set(keys.alive("a"), "a");
    c.set(keys.alive("c"), "c");
    Coordinator coordinator(std::move(co));
    push_join(c, keys, "a");
    push_join(c, keys, "b");  // its lease expired: no alive key
    push_join(c, keys, "c");
    REQUIRE_NOTHROW(c.get(keys.admit("a", 1), 20s));
    REQUIRE_NOTHROW(c.get(keys.admit("c", 1), 20s));
    CHECK_FALSE(c.check({keys.admit("b", 1)}));
}
