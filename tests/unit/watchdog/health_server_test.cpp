// The health endpoint on a real socket: real HTTP clients (Python's urllib, curl when
// installed) and hostile raw clients (oversized heads, silence, too many connections).
#include "ptrun/watchdog/health_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <mutex>
#include <thread>

#include "child_process.hpp"

using namespace ptrun::watchdog;
using ptrun::test::run_child;
using namespace std::chrono_literals;

namespace {

/// A HealthServer on its own io thread, serving a snapshot the test changes.
struct Served {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    std::mutex mutex;
    StatusSnapshot snapshot;
    bool throw_in_snapshot = false;
    std::unique_ptr<HealthServer> server;
    std::thread thread;

    explicit Served(HealthServerOptions options = {}, HealthServer::StacksFn stacks = {}) {
        snapshot.run_id = "job7";
        snapshot.workers = {WorkerStatus{0, 0, 4242, WorkerState::Running, 12, 0.25, {}, ""}};
        server = std::make_unique<HealthServer>(
            io, options,
            [this] {
                std::lock_guard lock(mutex);
                if (throw_in_snapshot) throw std::runtime_error("snapshot broke");
                return snapshot;
            },
            nullptr, std::move(stacks));
        thread = std::thread([this] { io.run(); });
    }
    ~Served() {
        work.reset();
        io.stop();
        thread.join();
        server.reset();
    }
    std::uint16_t port() const { return server->port(); }
    std::string url(const char* path) const {
        return "http://127.0.0.1:" + std::to_string(port()) + path;
    }
    std::size_t open_connections() {
        std::promise<std::size_t> p;
        boost::asio::post(io, [&] { p.set_value(server->open_connections()); });
        return p.get_future().get();
    }
    void set_state(WorkerState state, std::string detail) {
        std::lock_guard lock(mutex);
        snapshot.workers[0].state = state;
        snapshot.workers[0].detail = std::move(detail);
    }
};

/// A blocking TCP client with a receive deadline.
struct RawClient {
    int fd = -1;
    explicit RawClient(std::uint16_t port) {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        timeval tv{20, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    }
    ~RawClient() { ::close(fd); }
    void send(const std::string& s) const {
        REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()));
    }
    /// Everything until the server closes (or the 20 s deadline: then "<timeout>").
    std::string read_all() const {
        std::string out;
        char buf[4096];
        for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n == 0) return out;
            if (n < 0) return errno == ECONNRESET ? out : out + "<timeout>";
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
};

/// GET with Python's urllib: "<status> <body>".
std::string urllib_get(const std::string& url) {
    const std::string code =
        "import sys, urllib.request, urllib.error\n"
        "try:\n"
        "    r = urllib.request.urlopen(sys.argv[1], timeout=20)\n"
        "    print(r.status, r.read().decode(), end='')\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code, e.read().decode(), end='')\n";
    auto r = run_child({PTRUN_TEST_PYTHON, "-c", code, url});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
}

}  // namespace

TEST_CASE("Python's urllib reads /health and /status", "[watchdog][health]") {
    Served s;
    CHECK(s.port() != 0);
    CHECK(urllib_get(s.url("/health")) == "200 ok\n");
    auto r = run_child({PTRUN_TEST_PYTHON, "-c",
                        "import json, sys, urllib.request\n"
                        "d = json.load(urllib.request.urlopen(sys.argv[1], timeout=20))\n"
                        "w = d['workers'][0]\n"
                        "print(d['run_id'], d['healthy'], w['pid'], w['state'], "
                        "w['progress_count'], w['seconds_since_progress'])\n",
                        s.url("/status")});
    INFO(r.output);
    CHECK(r.output == "job7 True 4242 running 12 0.25\n");
    s.set_state(WorkerState::Hung, "no progress for 61 s (12 beats)");
    CHECK(urllib_get(s.url("/health")) ==
          "503 rank 0 (local rank 0, pid 4242) hung: no progress for 61 s (12 beats)\n");
    CHECK(urllib_get(s.url("/nope")).rfind("404 ", 0) == 0);
}

TEST_CASE("/stacks is answered when the agent has the stacks, or closed at the deadline",
          "[watchdog][health]") {
    {
        Served plain;  // no stacks function: not served
        CHECK(urllib_get(plain.url("/stacks")).rfind("404 ", 0) == 0);
    }
    // The agent replies later (its dumps take a while): the connection waits for it.
    std::atomic<boost::asio::io_context*> io{nullptr};  // set once the server runs
    Served s({}, [&](HealthServer::StacksReply reply) {
        // The timer lives in its own handler: it goes on the io thread, before the io_context.
        auto later = std::make_shared<boost::asio::steady_timer>(*io.load(), 100ms);
        later->async_wait([later, reply](boost::system::error_code) {
            reply(200, "== rank 0\nFile \"train.py\", line 3 in main");
        });
    });
    io.store(&s.io);
    CHECK(urllib_get(s.url("/stacks")) == "200 == rank 0\nFile \"train.py\", line 3 in main\n");
    CHECK(urllib_get(s.url("/health")) == "200 ok\n");  // the rest is unchanged

    // An agent that never replies: closed at io_timeout, nothing sent, the server serves on.
    HealthServerOptions quick;
    quick.io_timeout = 300ms;
    Served silent(quick, [](HealthServer::StacksReply) {});
    RawClient c(silent.port());
    c.send("GET /stacks HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(c.read_all().empty());
    CHECK(urllib_get(silent.url("/health")) == "200 ok\n");
}

TEST_CASE("curl reads /health", "[watchdog][health]") {
    if (::access("/usr/bin/curl", X_OK) != 0) {
        WARN("curl is not installed; skipped");
        return;
    }
    Served s;
    auto r = run_child({"/usr/bin/curl", "-s", "-w", " %{http_code}", s.url("/health")});
    CHECK(r.output == "ok\n 200");
    s.set_state(WorkerState::Stopped, "stopped by SIGSTOP for 3 s");
    r = run_child({"/usr/bin/curl", "-s", "-I", s.url("/health")});
    CHECK_THAT(r.output, Catch::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
}

TEST_CASE("hostile requests get an answer or a closed socket, never a stuck server",
          "[watchdog][health]") {
    Served s(HealthServerOptions{.max_request_bytes = 1024, .io_timeout = 500ms});
    SECTION("an oversized head is refused with 431") {
        RawClient c(s.port());
        c.send("GET /health HTTP/1.1\r\nX: " + std::string(4000, 'a'));
        CHECK_THAT(c.read_all(), Catch::StartsWith("HTTP/1.1 431 "));
    }
    SECTION("garbage gets 400") {
        RawClient c(s.port());
        c.send(std::string("\x00\x01\x02", 3) + "\r\n\r\n");
        CHECK_THAT(c.read_all(), Catch::StartsWith("HTTP/1.1 400 "));
    }
    SECTION("a client that stops sending is closed at the deadline") {
        const auto start = std::chrono::steady_clock::now();
        RawClient c(s.port());
        c.send("GET /health HTTP/1.1\r\n");
        CHECK(c.read_all().empty());
        CHECK(std::chrono::steady_clock::now() - start < 15s);
    }
    SECTION("a throwing snapshot answers 500 and the server goes on") {
        {
            std::lock_guard lock(s.mutex);
            s.throw_in_snapshot = true;
        }
        RawClient c(s.port());
        c.send("GET /status HTTP/1.1\r\n\r\n");
        CHECK_THAT(c.read_all(), Catch::StartsWith("HTTP/1.1 500 ") &&
                                     Catch::Contains("internal error: snapshot broke"));
        {
            std::lock_guard lock(s.mutex);
            s.throw_in_snapshot = false;
        }
        CHECK(urllib_get(s.url("/health")) == "200 ok\n");
    }
    SECTION("clients that connect and vanish leave nothing open") {
        for (int i = 0; i < 50; ++i) {
            RawClient c(s.port());
            if (i % 2 == 0) c.send("GET /hea");
        }
        CHECK(urllib_get(s.url("/health")) == "200 ok\n");
        for (int i = 0; i < 100 && s.open_connections() > 0; ++i) {
            RawClient probe(s.port());  // each exchange gives the server's loop a turn
            probe.send("GET /health HTTP/1.0\r\n\r\n");
            probe.read_all();
        }
        CHECK(s.open_connections() == 0);
    }
}

TEST_CASE("idle clients holding every connection cannot starve a probe", "[watchdog][health]") {
    Served s(HealthServerOptions{.max_connections = 3, .io_timeout = 60s});
    std::vector<std::unique_ptr<RawClient>> idle;
    for (int i = 0; i < 3; ++i) {
        idle.push_back(std::make_unique<RawClient>(s.port()));
        idle.back()->send("G");  // started, never finished
    }
    // Each probe is answered: the server makes room by closing the oldest idle connection.
    for (std::size_t probe = 0; probe < 3; ++probe) {
        RawClient p(s.port());
        p.send("GET /health HTTP/1.1\r\n\r\n");
        CHECK(p.read_all().rfind("HTTP/1.1 200 ", 0) == 0);
        CHECK(idle[probe]->read_all().empty());  // closed, oldest first
        CHECK(s.open_connections() <= 3);
        idle.push_back(std::make_unique<RawClient>(s.port()));  // the limit is full again
        idle.back()->send("G");
    }
}

TEST_CASE("the endpoint names what it cannot listen on", "[watchdog][health]") {
    boost::asio::io_context io;
    HealthServer first(io, {}, [] { return StatusSnapshot{}; });
    CHECK_THROWS_WITH(
        HealthServer(io, HealthServerOptions{.port = first.port()},
                     [] { return StatusSnapshot{}; }),
        Catch::Contains("cannot listen on 127.0.0.1 port " + std::to_string(first.port())));
    CHECK_THROWS_WITH(HealthServer(io, HealthServerOptions{.address = "localhost"},
                                   [] { return StatusSnapshot{}; }),
                      Catch::Contains("'localhost' is not an IP address"));
}
