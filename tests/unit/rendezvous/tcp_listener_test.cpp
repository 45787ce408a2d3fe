// listen_tcp: the store's listening socket from plain system calls; a TcpStoreServer adopts it.
#include "ptrun/rendezvous/tcp_listener.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "client_options.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;
using namespace std::chrono_literals;

TEST_CASE("listen_tcp listens close-on-exec and non-blocking on an ephemeral port", "[rdzv]") {
    std::string error;
    const int fd = listen_tcp("127.0.0.1", 0, error);
    REQUIRE(fd >= 0);
    CHECK(error.empty());
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    const auto port = bound_port(fd);
    CHECK(port > 0);

    std::string taken;  // the same port again: refused, and said why
    CHECK(listen_tcp("127.0.0.1", port, taken) == -1);
    CHECK(taken == "Address already in use");

    TcpStoreServerOptions options;  // a server serves on it
    options.adopt_fd = fd;
    TcpStoreServer server(std::move(options));
    CHECK(server.port() == port);
    TcpStoreClient client(client_options(port));
    client.set("k", "v");
    CHECK(client.get("k", 10s) == "v");
}

TEST_CASE("listen_tcp names an address that is no IP literal", "[rdzv]") {
    std::string error;
    CHECK(listen_tcp("localhost", 0, error) == -1);
    CHECK(error == "'localhost' is not an IP address");
    CHECK(bound_port(-1) == 0);
}

TEST_CASE("a port in use is said alike by listen_tcp's callers and by the server", "[rdzv]") {
    std::string error;
    const int fd = listen_tcp("127.0.0.1", 0, error);
    REQUIRE(fd >= 0);
    const auto port = bound_port(fd);
    std::string taken;
    CHECK(listen_tcp("127.0.0.1", port, taken) == -1);
    const std::string said = listen_failure("127.0.0.1", port, taken);
    CHECK(said == "store server: cannot listen on 127.0.0.1:" + std::to_string(port) +
                      ": Address already in use");
    TcpStoreServerOptions options;  // the server, listening by itself on the same port
    options.host = "127.0.0.1";
    options.port = port;
    try {
        TcpStoreServer server(std::move(options));
        FAIL("a second listener on port " << port);
    } catch (const StoreError& e) {
        CHECK(std::string(e.what()) == said);
    }
    ::close(fd);
}
