#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <thread>

#include "etcd_server.hpp"
#include "ptrun/etcd/client.hpp"
#include "ptrun/rendezvous/errors.hpp"

using namespace ptrun::etcd;
using ptrun::etcd::test::loopback_listener;
using namespace std::chrono_literals;

namespace {

/// A server on 127.0.0.1 that answers every request with the same bytes and closes: what a
/// broken or hostile member may send.
class CannedServer {
  public:
    explicit CannedServer(std::string reply) : reply_(std::move(reply)) {
        fd_ = loopback_listener(port_);
        thread_ = std::thread([this] { serve(); });
    }
    ~CannedServer() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    CannedServer(const CannedServer&) = delete;
    CannedServer& operator=(const CannedServer&) = delete;
    Endpoint endpoint() const { return {"127.0.0.1", port_}; }

  private:
    void serve() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;  // wakes to see stop_
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            char buf[4096];
            pollfd in{c, POLLIN, 0};
            if (::poll(&in, 1, 2000) > 0) (void)::read(c, buf, sizeof buf);
            std::size_t sent = 0;
            while (sent < reply_.size()) {
                const auto n = ::send(c, reply_.data() + sent, reply_.size() - sent, MSG_NOSIGNAL);
                if (n <= 0) break;
                sent += static_cast<std::size_t>(n);
            }
            ::close(c);
        }
    }

    std::string reply_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

std::string http_ok(const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
}

ClientOptions options_for(const CannedServer& server) {
    ClientOptions o;
    o.endpoints = {server.endpoint()};
    o.io_timeout = 2s;
    o.max_response = 64 * 1024;
    return o;
}

}  // namespace

TEST_CASE("etcd Client names the member and the flaw of a malformed reply", "[etcd][client]") {
    SECTION("not JSON") {
        CannedServer server(http_ok("{\"header\": nope"));
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("etcd at 127.0.0.1:" +
                                                         std::to_string(server.endpoint().port)) &&
                                             Catch::Contains("not JSON"));
    }
    SECTION("bad base64") {
        CannedServer server(http_ok(R"({"header":{"revision":"3"},"kvs":[{"key":"%%%%"}]})"));
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("'key' is not base64"));
    }
    SECTION("not HTTP") {
        CannedServer server("SSH-2.0-OpenSSH_9.2\r\n\r\n");
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("malformed HTTP reply"));
    }
    SECTION("an endless header") {
        CannedServer server("HTTP/1.1 200 OK\r\nX-Junk: " + std::string(100000, 'a') + "\r\n\r\n");
        Client c(options_for(server));
        CHECK_THROWS_AS(c.range("/k"), ptrun::rdzv::StoreError);
    }
    SECTION("a body over max_response") {
        CannedServer server(http_ok(std::string(100000, ' ') + "{}"));
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.put("/k", "v"), Catch::Contains("larger than max_response"));
    }
    SECTION("a watch stream of garbage") {
        auto chunk = [](const std::string& data) {
            char size[16];
            std::snprintf(size, sizeof size, "%zx\r\n", data.size());
            return size + data + "\r\n";
        };
        CannedServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            chunk("{\"result\":{\"created\":true}}\n") + chunk("[1,2]\n") +
                            "0\r\n\r\n");
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.watch("/k", "", 1, 2s), Catch::Contains("malformed stream message"));
    }
    SECTION("a member that closes at once") {
        CannedServer server("");
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("closed the connection"));
    }
}

TEST_CASE("etcd Client refuses a lease that cannot be one", "[etcd][client]") {
    // Issue 35.16: lease id -1 with a negative TTL was taken ("coordinates ... (etcd lease -1)").
    SECTION("a negative ID") {
        CannedServer server(http_ok(R"({"header":{"revision":"3"},"ID":"-1","TTL":"-5"})"));
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.lease_grant(5), Catch::Contains("lease ID -1: expected a positive ID"));
    }
    SECTION("a negative TTL") {
        CannedServer server(http_ok(R"({"header":{"revision":"3"},"ID":"42","TTL":"-5"})"));
        Client c(options_for(server));
        CHECK_THROWS_WITH(c.lease_grant(5), Catch::Contains("lease TTL -5"));
    }
}

TEST_CASE("etcd Client: limit_until bounds a call on a member that never answers",
          "[etcd][client]") {
    // Issue 35.16: a hanging member held one call for io_timeout, then retry_for, and ptrun
    // left at 15.5 s with join_timeout=8.
    std::uint16_t port = 0;
    const int fd = loopback_listener(port);  // accepts (the backlog) and never answers
    ClientOptions o;
    o.endpoints = {{"127.0.0.1", port}};
    o.io_timeout = 5s;
    o.retry_for = 10s;
    Client c(o);
    const auto start = std::chrono::steady_clock::now();
    c.limit_until(start + 1500ms);
    CHECK_THROWS_AS(c.lease_grant(5), ptrun::rdzv::ConnectionLost);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < 4s);                                             // not 5 s + 10 s
    CHECK_THROWS_AS(c.range("/k"), ptrun::rdzv::ConnectionLost);  // past it: at once
    CHECK(std::chrono::steady_clock::now() - start < 4s);
    ::close(fd);
}
