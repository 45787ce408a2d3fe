// Byte-level tests of the 2.2+ (modern) dialect against a real TcpStoreServer: every query type
// after VALIDATE, with the codes and reply layouts of spec §2.1/§2.5. Debian has no torch 2.x, so
// these bytes stand in for a 2.x client.
#include <catch2/catch.hpp>

#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "raw_connection.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {
const std::string kStop = bytes({0x00});
const std::string kCanceled = bytes({0x01});
const std::string kReady = bytes({0x00});
const std::string kNotReady = bytes({0x01});

/// A validated modern connection (VALIDATE, then a PING round trip as 2.5+ clients do).
RawConnection modern(const TcpStoreServer& server, std::uint32_t nonce = 4242) {
    RawConnection c(server.port());
    c.send(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}) + bytes({0x0D}) + u32(nonce));
    REQUIRE(c.read(4) == u32(nonce));
    return c;
}
}  // namespace

TEST_CASE("modern codes 1-8: set, compare_set, get, add, check, wait, num_keys, delete_key",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto c = modern(server);
    c.send(bytes({0x01}) + field("/k1") + field("v1"));  // SET: no reply
    c.send(bytes({0x03}) + field("/k1"));                // GET
    CHECK(c.read(10) == field("v1"));
    c.send(bytes({0x02}) + field("/k1") + field("v1") + field("v2"));  // COMPARE_SET swap
    CHECK(c.read(10) == field("v2"));
    c.send(bytes({0x02}) + field("/nope") + field("exp") + field("x"));  // absent, expected set
    CHECK(c.read(11) == field("exp"));
    c.send(bytes({0x04}) + field("/cnt") + i64(-7));  // ADD
    CHECK(c.read(8) == i64(-7));
    c.send(bytes({0x05}) + u64(2) + field("/k1") + field("/cnt"));  // CHECK ready
    CHECK(c.read(1) == kReady);
    c.send(bytes({0x05}) + u64(2) + field("/k1") + field("/nope"));  // CHECK not ready
    CHECK(c.read(1) == kNotReady);
    c.send(bytes({0x06}) + u64(1) + field("/k1"));  // WAIT, present
    CHECK(c.read(1) == kStop);
    c.send(bytes({0x07}));  // GETNUMKEYS
    CHECK(c.read(8) == i64(2));
    c.send(bytes({0x08}) + field("/k1"));  // DELETE_KEY
    CHECK(c.read(8) == i64(1));
    c.send(bytes({0x08}) + field("/k1"));
    CHECK(c.read(8) == i64(0));
    c.send(bytes({0x03}) + field("/k1"));  // GET of an absent key: empty, as the libuv server
    CHECK(c.read(8) == u64(0));
}

TEST_CASE("modern APPEND (9) creates then extends and wakes a waiter", "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto waiter = modern(server, 1);
    auto c = modern(server, 2);
    waiter.send(bytes({0x06}) + u64(1) + field("/log"));
    CHECK(waiter.silent_for(20ms));
    c.send(bytes({0x09}) + field("/log") + field("a"));  // no reply
    CHECK(waiter.read(1) == kStop);
    c.send(bytes({0x09}) + field("/log") + field("bc"));
    c.send(bytes({0x03}) + field("/log"));
    CHECK(c.read(11) == field("abc"));
}

TEST_CASE("modern MULTI_SET (11, i64 count) and MULTI_GET (10) in request order",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto c = modern(server);
    c.send(bytes({0x0B}) + i64(3) + field("/a") + field("1") + field("/b") + field("") +
           field("/c") + field("333"));  // no reply
    c.send(bytes({0x0A}) + u64(3) + field("/c") + field("/a") + field("/b"));
    CHECK(c.read(8 + 3 + 8 + 1 + 8) == field("333") + field("1") + field(""));
    c.send(bytes({0x07}));
    CHECK(c.read(8) == i64(3));
}

TEST_CASE("modern CANCEL_WAIT (12) answers WAIT_CANCELED and the connection goes on",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto c = modern(server);
    auto writer = modern(server);
    c.send(bytes({0x06}) + u64(1) + field("/later"));
    CHECK(c.silent_for(20ms));
    c.send(bytes({0x0C}));
    CHECK(c.read(1) == kCanceled);
    writer.send(bytes({0x01}) + field("/later") + field("x"));  // must not reach c any more
    c.send(bytes({0x0D}) + u32(99));                            // PING: next reply is the echo
    CHECK(c.read(4) == u32(99));
}

TEST_CASE("modern queue codes: QUEUE_PUSH (14), QUEUE_POP (15), QUEUE_LEN (16)",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto c = modern(server);
    auto popper = modern(server);
    c.send(bytes({0x10}) + field("/q"));  // QUEUE_LEN of an unknown queue
    CHECK(c.read(8) == i64(0));
    c.send(bytes({0x0F}) + field("/q"));  // QUEUE_POP of an empty queue: len 0, no value
    CHECK(c.read(8) == i64(0));
    CHECK(c.silent_for(20ms));
    // A blocking pop is WAIT [q] + QUEUE_POP: a push wakes it.
    popper.send(bytes({0x06}) + u64(1) + field("/q"));
    CHECK(popper.silent_for(20ms));
    c.send(bytes({0x0E}) + field("/q") + field("first"));  // no reply
    CHECK(popper.read(1) == kStop);
    c.send(bytes({0x0E}) + field("/q") + field("second"));
    c.send(bytes({0x10}) + field("/q"));
    CHECK(c.read(8) == i64(2));
    c.send(bytes({0x05}) + u64(1) + field("/q"));  // a non-empty queue counts in CHECK
    CHECK(c.read(1) == kReady);
    popper.send(bytes({0x0F}) + field("/q"));
    CHECK(popper.read(8 + 8 + 5) == i64(2) + field("first"));  // length before the pop
    popper.send(bytes({0x0F}) + field("/q"));
    CHECK(popper.read(8 + 8 + 6) == i64(1) + field("second"));
    c.send(bytes({0x07}));  // queues are not keys
    CHECK(c.read(8) == i64(0));
}

TEST_CASE("modern LIST_KEYS (17): count then every key as stored", "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto c = modern(server);
    c.send(bytes({0x11}));
    CHECK(c.read(8) == i64(0));
    c.send(bytes({0x01}) + field("/x") + field("1") + bytes({0x04}) + field("init/") + i64(1));
    CHECK(c.read(8) == i64(1));
    c.send(bytes({0x11}));
    const auto reply = c.read(8 + 8 + 2 + 8 + 5);
    REQUIRE(reply);
    CHECK(reply->substr(0, 8) == i64(2));
    const std::string rest = reply->substr(8);
    CHECK((rest == field("/x") + field("init/") || rest == field("init/") + field("/x")));
}

TEST_CASE("modern BARRIER (18) releases every arrival once world_size have come",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    auto a = modern(server, 1);
    auto b = modern(server, 2);
    auto late = modern(server, 3);
    a.send(bytes({0x12}) + field("/bar") + i64(3));
    b.send(bytes({0x12}) + field("/bar") + i64(3));
    CHECK(a.silent_for(20ms));
    CHECK(b.silent_for(1ms));
    late.send(bytes({0x12}) + field("/bar") + i64(3));
    CHECK(late.read(1) == kStop);
    CHECK(a.read(1) == kStop);
    CHECK(b.read(1) == kStop);
    late.send(bytes({0x03}) + field("/bar"));  // the count is an ordinary decimal key
    CHECK(late.read(9) == field("3"));
    // A barrier wait is cancelled like a WAIT.
    a.send(bytes({0x12}) + field("/bar2") + i64(2));
    CHECK(a.silent_for(20ms));
    a.send(bytes({0x0C}));
    CHECK(a.read(1) == kCanceled);
}

TEST_CASE("modern VALIDATE only first: wrong magic or a second one closes",
          "[rdzv][wire][modern]") {
    TcpStoreServer server;
    {
        auto c = modern(server);
        c.send(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}));  // a second VALIDATE
        CHECK(c.closed_by_server());
    }
    {
        RawConnection c(server.port());
        c.send(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}) + bytes({0x00}) + u32(0x3C85F7CE));
        CHECK(c.closed_by_server());  // VALIDATE twice in one segment
    }
    {
        RawConnection c(server.port());
        c.send(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}) + bytes({0x13}));  // code 19: unknown
        CHECK(c.closed_by_server());
    }
    auto ok = modern(server, 77);  // and the server goes on
    ok.send(bytes({0x07}));
    CHECK(ok.read(8) == i64(0));
}
