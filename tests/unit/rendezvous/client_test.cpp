#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <ctime>
#include <stdexcept>
#include <thread>

#include "client_options.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/prefix_store.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "raw_connection.hpp"
#include "store_conformance.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {

/// A one-connection scripted server for client behaviour the real server cannot provoke.
class ScriptedServer {
  public:
    ScriptedServer() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(listener_.get(), 4) == 0);
        socklen_t len = sizeof addr;
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
    }
    std::uint16_t port() const { return port_; }
    /// Accepts one connection (blocking); the socket is non-blocking, as socket_io expects.
    detail::Fd accept() {
        return detail::Fd(
            ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    }

  private:
    detail::Fd listener_;
    std::uint16_t port_ = 0;
};

/// Exactly n bytes within 10 s; throws otherwise (usable off the main thread, unlike REQUIRE).
std::string read_exact(const detail::Fd& fd, std::size_t n) {
    std::string s(n, '\0');
    if (!detail::recv_exact(fd, s.data(), n, detail::Clock::now() + 10s)) {
        throw std::runtime_error("scripted server: no " + std::to_string(n) + " bytes in 10 s");
    }
    return s;
}

/// What the scripted server saw; checked on the main thread after join().
struct Transcript {
    std::string wait_request;
    std::string cancel_request;
    std::exception_ptr failure;
};

/// Serves the handshake, takes one WAIT [k], then answers CANCEL_WAIT with `answer`.
void serve_cancel(ScriptedServer& server, const std::string& answer, Transcript& seen) {
    try {
        detail::Fd c = server.accept();
        const std::string hello = read_exact(c, 5 + 5);  // VALIDATE + PING
        detail::send_all(c, hello.substr(6, 4), detail::Clock::now() + 10s);
        seen.wait_request = read_exact(c, 1 + 8 + 8 + 1);
        seen.cancel_request = read_exact(c, 1);
        detail::send_all(c, answer, detail::Clock::now() + 10s);
        char sink;  // hold the connection until the client is done with it
        detail::recv_exact(c, &sink, 1, detail::Clock::now() + 10s);
    } catch (const ConnectionLost&) {  // the client closed: done
    } catch (...) {
        seen.failure = std::current_exception();
    }
}

void check_transcript(const Transcript& seen) {
    if (seen.failure) std::rethrow_exception(seen.failure);
    CHECK(seen.wait_request == bytes({0x06}) + u64(1) + field("k"));
    CHECK(seen.cancel_request == bytes({0x0C}));
}

}  // namespace

TEST_CASE("TcpStoreClient implements every verb against TcpStoreServer", "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    check_store_verbs(client);
    client.ping();
}

TEST_CASE("TcpStoreClient pops a queue in batches, in order, and times out on an empty one",
          "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    check_store_queue_batch(client);
}

TEST_CASE("TcpStoreClient interrupt fails a blocked call and every later one", "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    TcpStoreClient other(client_options(server.port()));
    check_store_interrupt(client, other);
}

TEST_CASE("TcpStoreClient wake cuts a wait short with CANCEL_WAIT, on the modern dialect",
          "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    TcpStoreClient writer(client_options(server.port()));
    check_store_wake(client, writer);
    TcpStoreClient legacy(client_options(server.port(), Dialect::Legacy));
    CHECK_FALSE(legacy.wakeable());
}

TEST_CASE("TcpStoreClient legacy dialect implements the 1.13 verbs", "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port(), Dialect::Legacy));
    check_store_verbs(client, false);
    CHECK_THROWS_WITH(client.queue_len("q"), Catch::Contains("modern dialect"));
    CHECK_THROWS_AS(client.ping(), StoreError);
}

TEST_CASE("TcpStoreClient waits time out naming keys and the connection stays usable",
          "[rdzv][client]") {
    TcpStoreServer server;
    for (Dialect d : {Dialect::Modern, Dialect::Legacy}) {
        TcpStoreClient s(client_options(server.port(), d));
        TcpStoreClient writer(client_options(server.port(), d));
        check_store_blocking(s, writer);
        writer.delete_key("later");
    }
}

TEST_CASE("TcpStoreClient returns when STOP_WAITING races its CANCEL_WAIT", "[rdzv][client]") {
    ScriptedServer server;
    Transcript seen;
    std::thread script([&] { serve_cancel(server, bytes({0x00, 0x01}), seen); });
    {
        TcpStoreClient client(client_options(server.port()));
        CHECK_NOTHROW(client.wait({"k"}, 50ms));
    }
    script.join();
    check_transcript(seen);
}

TEST_CASE("TcpStoreClient throws StoreTimeout when WAIT_CANCELED comes alone", "[rdzv][client]") {
    ScriptedServer server;
    Transcript seen;
    std::thread script([&] { serve_cancel(server, bytes({0x01}), seen); });
    {
        TcpStoreClient client(client_options(server.port()));
        CHECK_THROWS_AS(client.wait({"k"}, 50ms), StoreTimeout);
    }
    script.join();
    check_transcript(seen);
}

TEST_CASE("TcpStoreClient retries connecting until the server appears", "[rdzv][client]") {
    std::uint16_t port = 0;
    {
        TcpStoreServer probe;  // find a free port, then free it
        port = probe.port();
    }
    auto options = client_options(port);
    options.backoff = {10ms, 50ms, 2.0, 0.5, 7};
    std::atomic<bool> connected{false};
    std::exception_ptr failure;
    std::thread client_thread([&] {
        try {
            TcpStoreClient client(options);
            connected = true;
            client.wait({"ready"}, 10s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    TcpStoreServerOptions server_options;
    server_options.host = "127.0.0.1";
    server_options.port = port;
    TcpStoreServer server(server_options);
    TcpStoreClient(client_options(port)).set("ready", "1");
    client_thread.join();
    if (failure) std::rethrow_exception(failure);
    CHECK(connected);
}

TEST_CASE("TcpStoreClient reports ConnectionLost with the endpoint and attempts",
          "[rdzv][client]") {
    std::uint16_t port = 0;
    {
        TcpStoreServer probe;
        port = probe.port();
    }
    auto options = client_options(port);
    options.connect_timeout = 200ms;
    options.backoff = {10ms, 20ms, 2.0, 0.0, 1};
    CHECK_THROWS_WITH(
        TcpStoreClient(options),
        Catch::Contains("127.0.0.1:" + std::to_string(port)) && Catch::Contains("attempts"));
}

TEST_CASE("TcpStoreClient throws ConnectionLost when the server goes and reconnects after",
          "[rdzv][client]") {
    auto server = std::make_unique<TcpStoreServer>();
    const auto port = server->port();
    auto options = client_options(port);
    options.connect_timeout = 5s;
    options.backoff = {10ms, 50ms, 2.0, 0.5, 3};
    TcpStoreClient client(options);
    CHECK(client.add("n", 1) == 1);
    server->stop();
    CHECK_THROWS_AS(client.add("n", 1), ConnectionLost);
    TcpStoreServerOptions again;
    again.port = port;
    server = std::make_unique<TcpStoreServer>(again);
    CHECK(client.add("n", 1) == 1);  // reconnected; a fresh store
}

TEST_CASE("32 client threads meet at an add/wait barrier and a server barrier", "[rdzv][client]") {
    TcpStoreServer server;
    constexpr int kRanks = 32;
    spawn_threads(kRanks, [&](int rank) {
        TcpStoreClient raw(client_options(server.port()));
        PrefixStore store("", raw);  // keys as torch workers see them
        store.set("addr/" + std::to_string(rank), "host:" + std::to_string(rank));
        if (store.add("arrived", 1) == kRanks) store.set("all_arrived", "1");
        store.wait({"all_arrived"}, 30s);
        std::vector<std::string> keys;
        for (int r = 0; r < kRanks; ++r) keys.push_back("addr/" + std::to_string(r));
        const auto addrs = store.multi_get(keys, 30s);
        for (int r = 0; r < kRanks; ++r) {  // no Catch assertions on these threads
            if (addrs.at(static_cast<std::size_t>(r)) != "host:" + std::to_string(r)) {
                throw StoreError("rank " + std::to_string(rank) + " read a wrong address");
            }
        }
        raw.barrier("/exit", kRanks, 30s);
    });
    TcpStoreClient check(client_options(server.port()));
    CHECK(check.get("/arrived", 1s) == "32");
    CHECK(check.get("/exit", 1s) == "32");
}

TEST_CASE("one TcpStoreClient is safe to share between threads", "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    spawn_threads(8, [&](int) {
        for (int i = 0; i < 100; ++i) client.add("shared", 1);
    });
    CHECK(client.add("shared", 0) == 800);
}

TEST_CASE("barrier times out with CANCEL_WAIT and names its key", "[rdzv][client]") {
    TcpStoreServer server;
    TcpStoreClient client(client_options(server.port()));
    CHECK_THROWS_WITH(client.barrier("b", 2, 50ms), Catch::Contains("'b'"));
    CHECK(client.get("b", 1s) == "1");
}

TEST_CASE("a modern client facing a server that rejects VALIDATE suggests the legacy dialect",
          "[rdzv][client]") {
    ScriptedServer server;  // like 1.13: reads VALIDATE as a huge SET and resets
    std::thread script([&] {
        detail::Fd c = server.accept();
        char validate[5];
        detail::recv_exact(c, validate, sizeof validate, detail::Clock::now() + 10s);
    });
    auto options = client_options(server.port());
    options.connect_timeout = 300ms;
    options.io_timeout = 100ms;
    options.backoff = {10ms, 20ms, 2.0, 0.0, 1};
    CHECK_THROWS_WITH(TcpStoreClient(options), Catch::Contains("Dialect::Legacy"));
    script.join();
}

TEST_CASE("TcpStoreServer's clock key answers its CLOCK_MONOTONIC, other keys as stored",
          "[rdzv][client]") {
    TcpStoreServerOptions options;
    options.clock_key = "/clock";
    TcpStoreServer server(options);
    TcpStoreClient client(client_options(server.port()));
    CHECK_THROWS_AS(client.get("/clock", std::chrono::milliseconds(50)),
                    StoreTimeout);  // not set yet
    client.set("/clock", "");
    auto now = [] {
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
               static_cast<std::uint64_t>(ts.tv_nsec);
    };
    const auto before = now();
    const auto first = std::stoull(client.get("/clock", std::chrono::seconds(5)));
    const auto second = std::stoull(client.get("/clock", std::chrono::seconds(5)));
    const auto after = now();
    CHECK(before <= first);
    CHECK(first <= second);
    CHECK(second <= after);
    client.set("/other", "x");
    CHECK(client.get("/other", std::chrono::seconds(5)) == "x");
    TcpStoreServer plain;
    TcpStoreClient plain_client(client_options(plain.port()));
    plain_client.set("/clock", "stored");
    CHECK(plain_client.get("/clock", std::chrono::seconds(5)) == "stored");
}
