#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "raw_connection.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {
const std::string kStop = bytes({0x00});
}

TEST_CASE("server answers the captured PyTorch 1.13 session byte for byte", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection c(server.port());
    RawConnection callback(server.port());  // 1.13's idle second connection: never sends
    // ctor world_size=N: ADD "init/" 1
    c.send(bytes(
        {0x03, 5, 0, 0, 0, 0, 0, 0, 0, 0x69, 0x6E, 0x69, 0x74, 0x2F, 1, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(c.read(8) == i64(1));
    // set("k1","v1"), sent field by field like 1.13 does
    c.send(bytes({0x00}));
    c.send(bytes({0x03, 0, 0, 0, 0, 0, 0, 0}));
    c.send(bytes({0x2F, 0x6B, 0x31}));
    c.send(bytes({0x02, 0, 0, 0, 0, 0, 0, 0, 0x76, 0x31}));
    // get("k1") = WAIT + GET
    c.send(bytes({0x05, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0x6B, 0x31}));
    CHECK(c.read(1) == kStop);
    c.send(bytes({0x02, 3, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0x6B, 0x31}));
    CHECK(c.read(10) == bytes({2, 0, 0, 0, 0, 0, 0, 0, 0x76, 0x31}));
    // add("cnt",5), add("cnt",-2)
    c.send(bytes({0x03, 4, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0x63, 0x6E, 0x74, 5, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(c.read(8) == bytes({5, 0, 0, 0, 0, 0, 0, 0}));
    c.send(bytes({0x03, 4, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0x63, 0x6E, 0x74}) +
           bytes({0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
    CHECK(c.read(8) == bytes({3, 0, 0, 0, 0, 0, 0, 0}));
    // compare_set("k1","v1","v2")
    c.send(bytes({0x01}) + field("/k1") + field("v1") + field("v2"));
    CHECK(c.read(10) == field("v2"));
    // num_keys(): init/, /k1, /cnt
    c.send(bytes({0x06}));
    CHECK(c.read(8) == bytes({3, 0, 0, 0, 0, 0, 0, 0}));
    // delete_key("k1")
    c.send(bytes({0x08}) + field("/k1"));
    CHECK(c.read(8) == bytes({1, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(callback.silent_for(50ms));
}

TEST_CASE("server answers the modern connection start", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection c(server.port());
    c.send(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}));  // VALIDATE: no reply
    c.send(bytes({0x0D}) + u32(0x00ABCDEF));        // PING
    CHECK(c.read(4) == u32(0x00ABCDEF));
    c.send(bytes({0x04}) + u64(5) + "init/" + i64(1));  // ADD init/ 1
    CHECK(c.read(8) == i64(1));
    c.send(bytes({0x08}) + field("init/"));  // DELETE_KEY is 8 in both dialects
    CHECK(c.read(8) == i64(1));
}

TEST_CASE("legacy and modern clients share one store on one port", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection legacy(server.port());
    RawConnection modern(server.port());
    modern.send(validate() + bytes({0x06}) + u64(1) + field(""));  // modern WAIT [""]
    CHECK(modern.silent_for(20ms));
    legacy.send(bytes({0x00}) + field("") + field("x"));  // legacy SET "" = "x"
    CHECK(modern.read(1) == kStop);
    modern.send(bytes({0x07}));  // modern GETNUMKEYS
    CHECK(modern.read(8) == i64(1));
}

TEST_CASE("a legacy request after an abandoned wait gets no stale STOP_WAITING", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection c(server.port());
    c.send(bytes({0x00}) + field("/k1") + field("v1"));
    c.send(bytes({0x05}) + u64(1) + field("/absent"));      // wait("absent") ...
    CHECK(c.silent_for(20ms));                              // ... client-side socket timeout
    c.send(bytes({0x00}) + field("/absent") + field("v"));  // set("absent")
    c.send(bytes({0x05}) + u64(1) + field("/k1"));          // get("k1"): WAIT ...
    CHECK(c.read(1) == kStop);
    c.send(bytes({0x02}) + field("/k1"));  // ... + GET
    CHECK(c.read(10) == field("v1"));      // not shifted by a stale byte
    c.send(bytes({0x06}));
    CHECK(c.read(8) == i64(2));
}

TEST_CASE("cancel_wait is answered after a wait that already stopped", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection waiter(server.port());
    RawConnection writer(server.port());
    waiter.send(validate() + bytes({0x06}) + u64(1) + field("k"));  // WAIT [k]
    writer.send(validate() + bytes({0x01}) + field("k") + field("v"));
    CHECK(waiter.read(1) == kStop);
    waiter.send(bytes({0x0C}));  // CANCEL_WAIT raced the wake-up
    CHECK(waiter.read(1) == bytes({0x01}));
    waiter.send(bytes({0x06}) + u64(1) + field("never"));
    waiter.send(bytes({0x0C}));
    CHECK(waiter.read(1) == bytes({0x01}));
}

TEST_CASE("a modern request split into single bytes is parsed", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection c(server.port());
    c.send_bytewise(validate() + bytes({0x04}) + field("cnt") + i64(41) + bytes({0x04}) +
                    field("cnt") + i64(1) + bytes({0x0D}) + u32(7));
    CHECK(c.read(8) == i64(41));
    CHECK(c.read(8) == i64(42));
    CHECK(c.read(4) == u32(7));
}

TEST_CASE("watch_key on the legacy callback connection gets notifications", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection watcher(server.port());
    RawConnection c(server.port());
    watcher.send(bytes({0x07}) + field("/w"));
    CHECK(watcher.read(1) == bytes({0x03}));
    c.send(bytes({0x00}) + field("/w") + field("a"));
    CHECK(watcher.read(1 + 10 + 8 + 9) == bytes({0x01}) + field("/w") + field("") + field("a"));
    c.send(bytes({0x08}) + field("/w"));
    CHECK(c.read(8) == i64(1));
    CHECK(watcher.read(1 + 10 + 9 + 8) == bytes({0x02}) + field("/w") + field("a") + field(""));
}

TEST_CASE("malformed input closes only that connection", "[rdzv][wire]") {
    TcpStoreLimits limits;
    limits.max_key_bytes = 64;
    TcpStoreServer server({"127.0.0.1", 0, -1, limits, nullptr});
    RawConnection good(server.port());
    good.send(validate() + bytes({0x01}) + field("k") + field("v") + bytes({0x07}));
    CHECK(good.read(8) == i64(1));  // the SET is applied before the attacks start

    const std::vector<std::string> attacks = {
        bytes({0x63}),                                      // unknown legacy query
        validate() + bytes({0x42}),                         // unknown modern query
        validate() + validate(),                            // second VALIDATE
        bytes({0xCE, 0xF7, 0x85, 0x3C, 0x03}),              // per-request magic variant
        bytes({0x02}) + u64(65),                            // key over the limit
        bytes({0x00, 0xCE, 0xF7, 0x85, 0x3D, 0, 0, 0, 0}),  // 2.2 bytes, bad magic: huge SET
        validate() + bytes({0x05}) + u64(1u << 30),         // CHECK with 2^30 keys
        validate() + bytes({0x04}) + field("k") + i64(1),   // ADD on "v"
        "GET / HTTP/1.1\r\n\r\n",                           // port scanner
    };
    for (const auto& attack : attacks) {
        RawConnection bad(server.port());
        bad.send(attack);
        CHECK(bad.closed_by_server());
    }
    good.send(bytes({0x04}) + field("n") + i64(7));
    CHECK(good.read(8) == i64(7));
}

TEST_CASE("a client that does not read its replies is disconnected alone", "[rdzv][wire]") {
    TcpStoreLimits limits;
    limits.max_queued_bytes_per_connection = 4 << 20;
    TcpStoreServer server({"127.0.0.1", 0, -1, limits, nullptr});
    RawConnection good(server.port());
    good.send(validate() + bytes({0x01}) + field("big") + field(std::string(1 << 20, 'x')) +
              bytes({0x07}));
    CHECK(good.read(8) == i64(1));  // "big" exists before the slow client asks for it

    RawConnection slow(server.port());
    const int small = 4096;
    ::setsockopt(slow.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string gets = validate();
    for (int i = 0; i < 64; ++i) gets += bytes({0x03}) + field("big");  // 64 MiB of replies
    try {
        slow.send(gets);
    } catch (const ConnectionLost&) {  // the server may close before taking all of it
    }
    good.send(bytes({0x07}));
    CHECK(good.read(8) == i64(1));  // the server is not stalled
    CHECK(slow.closed_by_server(20s));
}

TEST_CASE("connections beyond max_connections are closed", "[rdzv][wire]") {
    TcpStoreLimits limits;
    limits.max_connections = 2;
    TcpStoreServer server({"127.0.0.1", 0, -1, limits, nullptr});
    RawConnection a(server.port());
    RawConnection b(server.port());
    a.send(bytes({0x06}));
    CHECK(a.read(8) == i64(0));
    b.send(bytes({0x06}));
    CHECK(b.read(8) == i64(0));  // both admitted before the third arrives
    RawConnection c(server.port());
    CHECK(c.closed_by_server());
}

TEST_CASE("server reports its ephemeral port, clears and stops idempotently", "[rdzv][server]") {
    TcpStoreServer server;
    CHECK(server.port() != 0);
    RawConnection c(server.port());
    c.send(bytes({0x00}) + field("a") + field("1") + bytes({0x06}));
    CHECK(c.read(8) == i64(1));
    server.clear();
    c.send(bytes({0x06}));
    CHECK(c.read(8) == i64(0));
    server.stop();
    CHECK(c.closed_by_server());
    server.stop();
    server.clear();
}

TEST_CASE("server adopts an already-listening socket", "[rdzv][server]") {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    TcpStoreServerOptions options;
    options.adopt_fd = fd;
    TcpStoreServer server(options);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    CHECK(server.port() == ntohs(addr.sin_port));
    RawConnection c(server.port());
    c.send(bytes({0x06}));
    CHECK(c.read(8) == i64(0));
}

TEST_CASE("server listens dual-stack on :: and refuses a bad address", "[rdzv][server]") {
    TcpStoreServerOptions options;
    options.host = "::";
    TcpStoreServer server(options);
    RawConnection c(server.port());  // connects over IPv4
    c.send(bytes({0x06}));
    CHECK(c.read(8) == i64(0));
    TcpStoreServerOptions taken;
    taken.host = "127.0.0.1";
    taken.port = server.port();
    CHECK_THROWS_AS(TcpStoreServer(taken), StoreError);  // port in use
    taken.host = "256.1.1.1";
    CHECK_THROWS_WITH(TcpStoreServer(taken), Catch::Contains("256.1.1.1"));
    TcpStoreServer named({.host = "localhost"});  // a name goes through the resolver
    RawConnection n(named.port());
    n.send(bytes({0x06}));
    CHECK(n.read(8) == i64(0));
}

TEST_CASE("server sockets are close-on-exec so forked workers do not inherit them",
          "[rdzv][server]") {
    TcpStoreServer server;
    RawConnection c(server.port());
    c.send(bytes({0x06}));
    REQUIRE(c.read(8) == i64(0));  // accepted and serving
    int sockets = 0;
    DIR* dir = ::opendir("/proc/self/fd");
    REQUIRE(dir != nullptr);
    while (const dirent* entry = ::readdir(dir)) {
        const std::string path = std::string("/proc/self/fd/") + entry->d_name;
        char target[PATH_MAX] = {};
        if (::readlink(path.c_str(), target, sizeof target - 1) <= 0) continue;
        if (std::string_view(target).substr(0, 7) != "socket:") continue;
        ++sockets;
        const int fd = std::atoi(entry->d_name);
        INFO("fd " << fd);
        CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    }
    ::closedir(dir);
    CHECK(sockets >= 3);  // listener, accepted connection, our client
}

TEST_CASE("a half-written request from a client that vanishes changes nothing", "[rdzv][wire]") {
    TcpStoreServer server;
    RawConnection waiter(server.port());
    waiter.send(validate() + bytes({0x06}) + u64(1) + field("k"));  // WAIT [k]
    {
        RawConnection quitter(server.port());
        const std::string set = validate() + bytes({0x01}) + field("k") + field("value");
        quitter.send(set.substr(0, set.size() - 2));  // SET k, value cut short
    }
    RawConnection probe(server.port());
    probe.send(validate() + bytes({0x05}) + u64(1) + field("k") + bytes({0x07}));
    CHECK(probe.read(1) == bytes({0x01}));  // CHECK: NOT_READY
    CHECK(probe.read(8) == i64(0));
    waiter.send(bytes({0x0C}));  // the waiter was never woken: its next byte is WAIT_CANCELED
    CHECK(waiter.read(1) == bytes({0x01}));
}
