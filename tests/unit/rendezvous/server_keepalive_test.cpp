// TCP keepalive on the server's connections: a client whose host vanished is dropped.
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>
#include <optional>

#include "log_capture.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "raw_connection.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {

std::uint16_t port_of(int fd, bool peer) {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length)
                        : ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    return rc == 0 && address.sin_family == AF_INET ? ntohs(address.sin_port) : 0;
}

/// The server's end of `client`: the socket of this process whose peer is the client's port.
std::optional<int> server_end(std::uint16_t server_port, const RawConnection& client) {
    const std::uint16_t client_port = port_of(client.fd(), false);
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return std::nullopt;
    std::optional<int> found;
    while (const dirent* entry = ::readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        if (fd == client.fd() || entry->d_name[0] == '.') continue;
        if (port_of(fd, false) == server_port && port_of(fd, true) == client_port) found = fd;
    }
    ::closedir(dir);
    return found;
}

int int_option(int fd, int level, int name) {
    int value = -1;
    socklen_t length = sizeof value;
    ::getsockopt(fd, level, name, &value, &length);
    return value;
}

}  // namespace

TEST_CASE("keepalive drops a client whose host vanished without a FIN or a reset",
          "[rdzv][server]") {
    LogCapture log;
    TcpStoreServerOptions options;
    options.host = "127.0.0.1";
    options.logger = log.logger();
    options.keepalive = std::chrono::seconds(1);
    TcpStoreServer server(options);
    std::string peer;
    {
        RawConnection client(server.port());
        client.send(bytes({0x06}));  // legacy GETNUMKEYS: accepted and served
        REQUIRE(client.read(8) == i64(0));
        peer = client.local_address();

        const auto fd = server_end(server.port(), client);
        REQUIRE(fd);
        CHECK(int_option(*fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
        CHECK(int_option(*fd, IPPROTO_TCP, TCP_KEEPIDLE) == 1);
        CHECK(int_option(*fd, IPPROTO_TCP, TCP_KEEPINTVL) == 1);
        CHECK(int_option(*fd, IPPROTO_TCP, TCP_KEEPCNT) == 6);

        // In repair mode close() sends nothing, as when the client's host is gone: without
        // keepalive the server would hold this connection forever.
        const int on = 1;
        if (::setsockopt(client.fd(), IPPROTO_TCP, TCP_REPAIR, &on, sizeof on) != 0) {
            WARN("TCP_REPAIR needs CAP_NET_ADMIN: the reaping itself is not exercised");
            return;
        }
    }
    // The first probe (after 1 s idle) reaches a port with no socket and is answered by a reset.
    const auto line = log.wait_for({"from " + peer, "closed"});
    INFO(line);
    CHECK_FALSE(line.empty());
    CHECK(server.stats().connections == 0);
}

TEST_CASE("keepalive 0 leaves it off", "[rdzv][server]") {
    TcpStoreServerOptions options;
    options.host = "127.0.0.1";
    options.keepalive = std::chrono::seconds(0);
    TcpStoreServer server(options);
    RawConnection client(server.port());
    client.send(bytes({0x06}));
    REQUIRE(client.read(8) == i64(0));
    const auto fd = server_end(server.port(), client);
    REQUIRE(fd);
    CHECK(int_option(*fd, SOL_SOCKET, SO_KEEPALIVE) == 0);
}
