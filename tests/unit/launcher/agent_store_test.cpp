// The agent's store for its workers: at the first connection, the server is made on the socket
// that listened since the start, and serves the client that waited in the backlog.
#include "ptrun/launcher/agent/agent_store.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

#include "ptrun/rendezvous/tcp_store_client.hpp"

using namespace ptrun;
using namespace ptrun::launcher;
using namespace std::chrono_literals;

namespace {

rdzv::TcpStoreClient client_of(std::uint16_t port) {
    rdzv::TcpStoreClientOptions o;
    o.port = port;
    o.connect_timeout = 10s;
    o.io_timeout = 10s;
    return rdzv::TcpStoreClient(o);
}

LaunchConfig standalone() {
    LaunchConfig c;
    c.standalone = true;
    return c;
}

}  // namespace

TEST_CASE("agent store: made at the first connection, it serves the client that waited",
          "[launcher][agent_store]") {
    auto store = start_agent_store(standalone(), nullptr, /*at_first_connection=*/true);
    REQUIRE(store.endpoint.port > 0);
    REQUIRE(store.endpoint.listening_fd >= 0);
    REQUIRE(store.endpoint.start);
    CHECK(store.endpoint.stats().keys == 0);  // no server yet: nothing served, nothing to clear
    store.endpoint.reset();
    auto answered = std::async(std::launch::async, [&] {
        auto client = client_of(store.endpoint.port);  // connects: waits in the backlog
        client.set("k", "v");
        return client.get("k", 10s);
    });
    CHECK(answered.wait_for(200ms) == std::future_status::timeout);  // nobody serves yet
    store.endpoint.start();
    REQUIRE(answered.wait_for(10s) == std::future_status::ready);
    CHECK(answered.get() == "v");
    CHECK(store.endpoint.stats().keys == 1);
    store.endpoint.reset();  // between attempts: a fresh namespace
    CHECK(store.endpoint.stats().keys == 0);
}

TEST_CASE("agent store: serving at once, it has no first connection to wait for",
          "[launcher][agent_store]") {
    auto store = start_agent_store(standalone(), nullptr, /*at_first_connection=*/false);
    CHECK(store.endpoint.listening_fd == -1);
    CHECK_FALSE(store.endpoint.start);
    auto client = client_of(store.endpoint.port);
    client.set("k", "v");
    CHECK(client.get("k", 10s) == "v");  // answered: the set (which has no reply) was served
    CHECK(store.endpoint.stats().keys == 1);
}
