// EtcdLeadership (launcher/membership) against a real etcd: one agent coordinates at a time, and
// another takes over when it goes.
#include "ptrun/launcher/membership/etcd_leadership.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "etcd_server.hpp"
#include "ptrun/etcd/client.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"

using namespace ptrun::launcher;
using namespace ptrun::etcd::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

EtcdLeadershipOptions agent(const EtcdCluster& etcd, const std::string& id) {
    EtcdLeadershipOptions o;
    o.client = etcd.client_options();
    o.self_id = id;
    o.lease_ttl_s = 2;
    o.coordinator.keys = rdzv_keys("lead-test");
    o.coordinator.policy.min_nodes = 1;
    o.coordinator.policy.max_nodes = 2;
    o.coordinator.heartbeat = 200ms;
    o.coordinator.logger = std::make_shared<spdlog::logger>(
        "leadership-test", std::make_shared<spdlog::sinks::null_sink_mt>());
    return o;
}

/// True once `holds` is true, checked until `within` has passed.
template <typename Holds>
bool eventually(Holds holds, std::chrono::milliseconds within) {
    const auto end = Clock::now() + within;
    while (!holds()) {
        if (Clock::now() > end) return false;
        std::this_thread::sleep_for(20ms);  // the role changes hands on etcd's events; bounded
    }
    return true;
}

}  // namespace

TEST_CASE("etcd leadership: one agent coordinates, and another takes over when it goes",
          "[etcd][leadership]") {
    EtcdCluster etcd;
    auto a = std::make_unique<EtcdLeadership>(agent(etcd, "a"));
    REQUIRE(eventually([&] { return a->leads(); }, 5s));
    EtcdLeadership b(agent(etcd, "b"));
    ptrun::etcd::Client client(etcd.client_options());
    const auto keys = rdzv_keys("lead-test");
    CHECK(client.range(keys.leader()).kvs.at(0).value == "a");
    CHECK_FALSE(b.leads());
    REQUIRE(eventually([&] { return client.range(keys.coordinator_state()).count == 1; }, 5s));

    const auto gone = Clock::now();
    a.reset();  // revokes its lease: b need not wait for the TTL
    REQUIRE(eventually([&] { return b.leads(); }, 5s));
    CHECK(Clock::now() - gone < 2s);
    CHECK(client.range(keys.leader()).kvs.at(0).value == "b");
    CHECK(client.range(keys.alive("a")).count == 0);
    CHECK(client.range(keys.alive("b")).count == 1);
}

TEST_CASE("etcd leadership: an agent starts with its lease and one transaction",
          "[etcd][leadership]") {
    // Its alive key rides on the campaign's first transaction, taken or not (at 1,024 agents a
    // request per agent), and is there when the constructor returns: a join may follow at once.
    EtcdCluster etcd;
    const auto before = etcd.handled();
    EtcdLeadership a(agent(etcd, "a"));
    EtcdLeadership b(agent(etcd, "b"));
    ptrun::etcd::Client client(etcd.client_options());
    const auto keys = rdzv_keys("lead-test");
    CHECK(client.range(keys.alive("a")).count == 1);
    CHECK(client.range(keys.alive("b")).count == 1);
    REQUIRE(eventually([&] { return a.leads(); }, 5s));
    CHECK_FALSE(b.leads());
    const auto after = etcd.handled();
    CHECK(EtcdCluster::calls_since(before, after, "LeaseGrant") == 2);
    CHECK(EtcdCluster::calls_since(before, after, "Put") == 0);
}

TEST_CASE("etcd leadership: a waiting agent keeps one watch of the leader across its renewals",
          "[etcd][leadership]") {
    // Another node holds the role (its lease outlives the test); this agent renews its own lease
    // every TTL/3 while it watches: one watch stream, not a new one after each renewal (at 1,024
    // waiting agents, a stream per agent per renewal).
    EtcdCluster etcd;
    ptrun::etcd::Client client(etcd.client_options());
    const auto keys = rdzv_keys("lead-test");
    const auto holder = client.lease_grant(60);
    client.put(keys.leader(), "someone", holder);
    const auto before = etcd.started();
    EtcdLeadership b(agent(etcd, "b"));  // lease TTL 2 s: renewed every ~0.67 s
    REQUIRE(eventually(
        [&] { return EtcdCluster::calls_since(before, etcd.started(), "LeaseKeepAlive") >= 3; },
        10s));
    CHECK_FALSE(b.leads());
    CHECK(EtcdCluster::calls_since(before, etcd.started(), "Watch") == 1);
    client.lease_revoke(holder);  // the holder goes: b takes the role from its watch
    REQUIRE(eventually([&] { return b.leads(); }, 5s));
}
