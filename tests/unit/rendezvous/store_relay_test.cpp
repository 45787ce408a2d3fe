// A TcpStoreServer in relay mode in front of a real one: every verb through it, in both
// dialects, and what it saves the store (connections, ADDs and WAITs coalesced).
#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "client_options.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/prefix_store.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "store_conformance.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {

TcpStoreServerOptions relay_to(std::uint16_t head_port, int links = 2) {
    TcpStoreServerOptions o;
    o.host = "127.0.0.1";
    o.relay.host = "127.0.0.1";
    o.relay.port = head_port;
    o.relay.links = links;
    return o;
}

}  // namespace

TEST_CASE("a relay serves every verb of both dialects from the store behind it", "[rdzv][relay]") {
    TcpStoreServer head;
    TcpStoreServer relay(relay_to(head.port()));
    {
        TcpStoreClient client(client_options(relay.port()));
        check_store_verbs(client);
        client.ping();
        check_store_queue_batch(client);
    }
    TcpStoreClient head_client(client_options(head.port()));
    CHECK(head_client.get("k1", 1s) == std::string("\0bin\xff", 5));  // stored in the head
    head_client.set("", "");
    for (const auto& key : head_client.list_keys()) head_client.delete_key(key);
    head_client.delete_key("");
    TcpStoreClient legacy(client_options(relay.port(), Dialect::Legacy));
    check_store_verbs(legacy, false);
}

TEST_CASE("a relay's waits time out, wake up and leave the connection usable", "[rdzv][relay]") {
    TcpStoreServer head;
    TcpStoreServer relay(relay_to(head.port()));
    TcpStoreClient waiter(client_options(relay.port()));
    TcpStoreClient writer(client_options(head.port()));  // written at the head itself
    check_store_blocking(waiter, writer);
    CHECK_THROWS_WITH(waiter.barrier("b", 2, 50ms), Catch::Contains("'b'"));
    CHECK(writer.get("b", 1s) == "1");
    waiter.set("after", "1");  // the BARRIER's connection was given up, not this client's
    CHECK(waiter.get("after", 1s) == "1");
}

TEST_CASE("ranks through a relay meet at torch's barrier with a few store connections",
          "[rdzv][relay]") {
    TcpStoreServer head;
    TcpStoreServer relay(relay_to(head.port(), 2));
    constexpr int kRanks = 64;
    std::atomic<int> max_head_connections{0};
    std::vector<std::int64_t> counts(kRanks);
    spawn_threads(kRanks, [&](int rank) {
        TcpStoreClient raw(client_options(relay.port()));
        PrefixStore store("", raw);
        store.set("addr/" + std::to_string(rank), "host:" + std::to_string(rank));
        counts[static_cast<std::size_t>(rank)] = store.add("arrived", 1);
        if (counts[static_cast<std::size_t>(rank)] == kRanks) store.set("all_arrived", "1");
        store.wait({"all_arrived"}, 30s);
        const auto connections = static_cast<int>(head.stats().connections);
        int seen = max_head_connections.load();
        while (connections > seen &&
               !max_head_connections.compare_exchange_weak(seen, connections)) {
        }
        std::vector<std::string> keys;
        for (int r = 0; r < kRanks; ++r) keys.push_back("addr/" + std::to_string(r));
        const auto addrs = store.multi_get(keys, 30s);
        for (int r = 0; r < kRanks; ++r) {
            if (addrs.at(static_cast<std::size_t>(r)) != "host:" + std::to_string(r)) {
                throw StoreError("rank " + std::to_string(rank) + " read a wrong address");
            }
        }
        raw.barrier("/exit", kRanks, 30s);
    });
    // Every rank got its own count: the coalesced ADDs handed out one each.
    std::set<std::int64_t> distinct(counts.begin(), counts.end());
    CHECK(distinct.size() == kRanks);
    CHECK(*distinct.begin() == 1);
    CHECK(*distinct.rbegin() == kRanks);
    // 2 pipelined links plus wait links (the shared WAITs; a BARRIER each while they wait).
    CHECK(max_head_connections.load() <= 2 + kRanks);
    TcpStoreClient check(client_options(head.port()));
    CHECK(check.get("/arrived", 1s) == std::to_string(kRanks));
    CHECK(check.get("/exit", 1s) == std::to_string(kRanks));
}

TEST_CASE("a relay shares one WAIT for every client waiting on the same keys", "[rdzv][relay]") {
    TcpStoreServer head;
    TcpStoreServer relay(relay_to(head.port(), 1));
    constexpr int kWaiters = 32;
    std::thread waiters([&] {
        spawn_threads(kWaiters, [&](int) {
            TcpStoreClient client(client_options(relay.port()));
            client.wait({"go"}, 30s);
        });
    });
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (relay.stats().relay_waiting < kWaiters && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(5ms);  // poll with a deadline: no event says all wait
    }
    CHECK(relay.stats().relay_waiting == kWaiters);
    // 1 pipelined link + 1 wait link at the head, however many clients wait.
    CHECK(head.stats().connections == 2);
    CHECK(relay.stats().relay_links == 2);
    TcpStoreClient writer(client_options(head.port()));
    writer.set("go", "1");
    waiters.join();
}

TEST_CASE("a relay whose store is gone closes its clients, and cannot start without one",
          "[rdzv][relay]") {
    auto head = std::make_unique<TcpStoreServer>();
    const auto port = head->port();
    TcpStoreServer relay(relay_to(port));
    TcpStoreClientOptions o = client_options(relay.port());
    o.connect_timeout = 1s;
    TcpStoreClient client(o);
    client.set("a", "1");
    CHECK(client.get("a", 5s) == "1");
    head->stop();
    head.reset();
    CHECK_THROWS_AS(client.get("a", 5s), StoreError);
    TcpStoreServerOptions none = relay_to(port);
    none.relay.connect_timeout = std::chrono::seconds(1);
    CHECK_THROWS_WITH(
        TcpStoreServer(none),
        Catch::Contains("cannot connect to the store at 127.0.0.1:" + std::to_string(port)));
}

TEST_CASE("a relay's wait connections given up free their place under max_wait_links",
          "[rdzv][relay]") {
    TcpStoreServer head;
    auto options = relay_to(head.port(), 1);
    options.relay.max_wait_links = 1;
    TcpStoreServer relay(options);
    TcpStoreClient client(client_options(relay.port()));
    for (int i = 0; i < 3; ++i) {  // each timeout closes the only wait connection
        CHECK_THROWS_AS(client.wait({"never"}, 50ms), StoreTimeout);
    }
    TcpStoreClient writer(client_options(head.port()));
    writer.set("now", "1");
    client.wait({"now"}, 5s);
}
