#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <thread>

#include "etcd_server.hpp"
#include "ptrun/etcd/client.hpp"
#include "ptrun/rendezvous/errors.hpp"

using namespace ptrun::etcd;
using namespace ptrun::etcd::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// A listening socket that never accepts: connects succeed (the backlog) and nothing answers.
class BlackHole {
  public:
    BlackHole() { fd_ = loopback_listener(port_); }
    ~BlackHole() { ::close(fd_); }
    BlackHole(const BlackHole&) = delete;
    BlackHole& operator=(const BlackHole&) = delete;
    std::uint16_t port() const { return port_; }

  private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

/// Runs `call` on a thread, lets it block, interrupts `client` and returns how long the call
/// took to fail after the interrupt and what it threw.
std::pair<Clock::duration, std::exception_ptr> interrupt_blocked(
    Client& client, const std::function<void()>& call) {
    std::exception_ptr failure;
    std::thread blocked([&] {
        try {
            call();
        } catch (...) {
            failure = std::current_exception();
        }
    });
    // Time to block; were it not blocked yet, its call fails all the same.
    std::this_thread::sleep_for(300ms);
    const auto start = Clock::now();
    client.interrupt();
    blocked.join();
    return {Clock::now() - start, failure};
}

}  // namespace

TEST_CASE("etcd interrupt() wakes a blocked watch at once and fails later calls",
          "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto rev = c.range("/never").revision;
    auto [took, failure] = interrupt_blocked(c, [&] { c.watch("/never", "", rev + 1, 30s); });
    CHECK(took < 1s);
    REQUIRE(failure);
    CHECK_THROWS_AS(std::rethrow_exception(failure), ptrun::rdzv::ConnectionLost);
    CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("interrupted"));
    CHECK_THROWS_AS(c.watch("/k", "", 0, 1s), ptrun::rdzv::ConnectionLost);
}

TEST_CASE("etcd interrupt() wakes a request a member never answers", "[etcd][client]") {
    BlackHole hole;
    ClientOptions options;
    options.endpoints = {{"127.0.0.1", hole.port()}};
    options.io_timeout = 30s;
    Client c(options);
    auto [took, failure] = interrupt_blocked(c, [&] { c.range("/k"); });
    CHECK(took < 1s);
    REQUIRE(failure);
    CHECK_THROWS_WITH(std::rethrow_exception(failure), Catch::Contains("interrupted"));
}

TEST_CASE("etcd a member that never answers times out after io_timeout", "[etcd][client]") {
    BlackHole hole;
    EtcdCluster etcd;
    ClientOptions options = etcd.client_options();
    options.endpoints.insert(options.endpoints.begin(), Endpoint{"127.0.0.1", hole.port()});
    // Long enough for the live member's fsync'd put on a loaded machine (TSan in CI).
    options.io_timeout = 2s;
    Client c(options);
    c.put("/k", "v");  // the silent member first, then the live one
    CHECK(c.range("/k").count == 1);

    ClientOptions silent;
    silent.endpoints = {{"127.0.0.1", hole.port()}};
    silent.io_timeout = 300ms;
    Client alone(silent);
    CHECK_THROWS_WITH(alone.range("/k"), Catch::Contains("timed out after 300 ms"));
}

TEST_CASE("etcd retry_for tries every member again until it has passed, and interrupt() ends it",
          "[etcd][client]") {
    ClientOptions options;
    options.endpoints = {{"127.0.0.1", free_port()}, {"127.0.0.1", free_port()}};
    options.io_timeout = 1s;
    options.retry_for = 1s;
    Client c(options);
    const auto start = Clock::now();
    CHECK_THROWS_WITH(c.range("/k"), Catch::Contains("connection refused"));
    const auto took = Clock::now() - start;
    CHECK(took >= 500ms);  // tried again after 250 ms pauses, not given up at once
    CHECK(took < 3s);

    options.retry_for = 60s;
    Client patient(options);
    auto [waited, failure] = interrupt_blocked(patient, [&] { patient.range("/k"); });
    CHECK(waited < 1s);
    REQUIRE(failure);
    CHECK_THROWS_WITH(std::rethrow_exception(failure), Catch::Contains("interrupted"));
}
