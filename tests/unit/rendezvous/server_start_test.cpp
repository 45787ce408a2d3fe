// TcpStoreServer with start_thread = false (the agent's store, started at the first connection):
// a client that connects first is answered once start() runs; before it, calls run here; a
// server stopped without ever starting frees its port.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

#include "client_options.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;
using namespace std::chrono_literals;

namespace {

TcpStoreServerOptions deferred() {
    TcpStoreServerOptions o;
    o.host = "127.0.0.1";
    o.start_thread = false;
    return o;
}

}  // namespace

TEST_CASE("a deferred store answers a client that connected before start()", "[rdzv][start]") {
    TcpStoreServer server(deferred());
    REQUIRE(server.listening_fd() >= 0);
    CHECK(server.stats().connections == 0);  // runs on this thread: none accepted yet
    server.clear();
    auto answered = std::async(std::launch::async, [&] {
        TcpStoreClient client(client_options(server.port()));
        client.set("k", "v");
        return client.get("k", 10s);
    });
    // The client waits (backlog, then its request unanswered) until the thread starts.
    CHECK(answered.wait_for(200ms) == std::future_status::timeout);
    server.start();
    server.start();  // idempotent
    REQUIRE(answered.wait_for(20s) == std::future_status::ready);
    CHECK(answered.get() == "v");
    CHECK(server.stats().keys == 1);
}

TEST_CASE("a deferred store stopped before start() frees its port and stays stopped",
          "[rdzv][start]") {
    TcpStoreServer server(deferred());
    const auto port = server.port();
    server.stop();
    server.start();  // after stop: nothing starts
    // The port is free again: bind it.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);
}
