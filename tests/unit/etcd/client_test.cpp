#include "ptrun/etcd/client.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <thread>

#include "etcd_server.hpp"
#include "ptrun/rendezvous/errors.hpp"

using namespace ptrun::etcd;
using namespace ptrun::etcd::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("etcd Client puts, ranges and deletes keys", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const std::string binary("\0\xff\x01z", 4);
    const auto rev = c.put("/t/b", binary);
    CHECK(rev > 0);
    c.put("/t/a", "1");
    c.put("/t/c", "3");
    auto one = c.range("/t/b");
    REQUIRE(one.kvs.size() == 1);
    CHECK(one.kvs[0].value == binary);
    CHECK(one.kvs[0].create_revision == rev);
    CHECK(one.kvs[0].version == 1);
    CHECK(one.count == 1);

    auto by_key = c.range("/t/", prefix_end("/t/"));
    REQUIRE(by_key.kvs.size() == 3);
    CHECK(by_key.kvs[0].key == "/t/a");
    auto by_creation = c.range("/t/", prefix_end("/t/"), 2, true);
    REQUIRE(by_creation.kvs.size() == 2);
    CHECK(by_creation.kvs[0].key == "/t/b");
    CHECK(by_creation.kvs[1].key == "/t/a");
    CHECK(by_creation.count == 3);

    auto none = c.range("/nothing");
    CHECK(none.kvs.empty());
    CHECK(none.count == 0);
    CHECK(none.revision >= rev);

    CHECK(c.delete_range("/t/", prefix_end("/t/")) == 3);
    CHECK(c.delete_range("/t/a") == 0);
    CHECK(c.range("/t/", prefix_end("/t/")).count == 0);
    CHECK(prefix_end("a\xff") == "b");
    CHECK(prefix_end("\xff") == std::string(1, '\0'));
    CHECK(c.endpoints_text() == "127.0.0.1:" + std::to_string(etcd.endpoint().port));
}

TEST_CASE("etcd Client txn takes the success or the failure branch", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto absent = Compare::equal("/x", Compare::Target::Version, 0);
    auto first = c.txn({absent}, {Op::put("/x", "1"), Op::range("/x")}, {Op::range("/x")});
    CHECK(first.succeeded);
    REQUIRE(first.ranges.size() == 1);
    CHECK(first.ranges[0].at(0).value == "1");
    auto second = c.txn({absent}, {Op::put("/x", "2")}, {Op::range("/x")});
    CHECK_FALSE(second.succeeded);
    REQUIRE(second.ranges.size() == 1);
    CHECK(second.ranges[0].at(0).value == "1");

    const auto value = Compare::value_equal("/x", "1");
    CHECK(c.txn({value}, {Op::remove("/x")}).succeeded);
    CHECK(c.range("/x").kvs.empty());
    CHECK_FALSE(c.txn({value}, {Op::put("/x", "again")}).succeeded);  // absent: no value matches
}

TEST_CASE("etcd Client leases: grant, keepalive, and revoke deletes their keys", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto id = c.lease_grant(30);
    CHECK(id != 0);
    c.put("/leased", "v", id);
    CHECK(c.range("/leased").kvs.at(0).lease == id);
    const auto ttl = c.lease_keepalive(id);
    CHECK(ttl > 0);
    CHECK(ttl <= 30);
    c.lease_revoke(id);
    CHECK(c.range("/leased").kvs.empty());
    CHECK(c.lease_keepalive(id) == 0);
    c.lease_revoke(id);    // already gone: no error
    c.put("/after", "1");  // the connection is still good after the streams
    CHECK(c.range("/after").count == 1);
}

TEST_CASE("etcd Client watch returns an event that happens after it started", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto start = c.range("/w/").revision + 1;
    std::vector<WatchEvent> events;
    std::exception_ptr failure;
    std::thread watcher([&] {
        try {
            events = c.watch("/w/", prefix_end("/w/"), start, 20s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    Client writer(etcd.client_options());
    const auto rev = writer.put("/w/k", "v");
    watcher.join();
    if (failure) std::rethrow_exception(failure);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == WatchEvent::Type::Put);
    CHECK(events[0].kv.key == "/w/k");
    CHECK(events[0].kv.value == "v");
    CHECK(events[0].kv.mod_revision == rev);

    const auto deleted = writer.delete_range("/w/k");
    CHECK(deleted == 1);
    auto del = c.watch("/w/", prefix_end("/w/"), rev + 1, 5s);
    REQUIRE(del.size() == 1);
    CHECK(del[0].type == WatchEvent::Type::Delete);
    CHECK(del[0].kv.key == "/w/k");
}

TEST_CASE("etcd Client watch with a catch-up starts where it is set up", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    Client writer(etcd.client_options());
    const auto start = c.range("/g/").revision + 1;
    writer.put("/g/before", "1");  // between the read and the watch: the catch-up's to read
    int calls = 0;
    SECTION("a catch-up that has what it waited for ends the watch at once") {
        const auto t0 = Clock::now();
        CHECK(c.watch("/g/", prefix_end("/g/"), start, 20s, [&] {
                   ++calls;
                   return c.range("/g/before").kvs.size() == 1;
               }).empty());
        CHECK(calls == 1);
        CHECK(Clock::now() - t0 < 10s);
    }
    SECTION("else the watch goes on from where it was set up, not from start_revision") {
        const auto events = c.watch("/g/", prefix_end("/g/"), start, 20s, [&] {
            ++calls;
            writer.put("/g/after", "2");  // after the set-up: the watch's
            return false;
        });
        CHECK(calls == 1);
        REQUIRE(events.size() == 1);
        CHECK(events[0].kv.key == "/g/after");
    }
    SECTION("no write since start_revision - 1: no catch-up") {
        const auto now = c.range("/g/").revision + 1;
        CHECK(c.watch("/g/", prefix_end("/g/"), now, 300ms, [&] {
                   ++calls;
                   return true;
               }).empty());
        CHECK(calls == 0);
    }
}

TEST_CASE("etcd Client watch times out empty", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto start = Clock::now();
    CHECK(c.watch("/quiet", "", c.range("/quiet").revision + 1, 300ms).empty());
    const auto waited = Clock::now() - start;
    CHECK(waited >= 300ms);
    CHECK(waited < 3s);
}

TEST_CASE("etcd Client watch of a compacted revision is an error", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    const auto old = c.put("/c", "1");
    c.put("/c", "2");
    const auto now = c.put("/c", "3");
    const auto r = ptrun::test::run_child(
        {"etcdctl", "--endpoints=http://127.0.0.1:" + std::to_string(etcd.endpoint().port),
         "compact", std::to_string(now)},
        {{"ETCDCTL_API", "3"}}, 20s);
    REQUIRE(r.exit_code == 0);
    CHECK_THROWS_WITH(c.watch("/c", "", old, 5s), Catch::Contains("compacted"));
    CHECK(c.watch("/c", "", now, 5s).at(0).kv.value == "3");
}

TEST_CASE("etcd Client fails over past a closed port to the next member", "[etcd][client]") {
    EtcdCluster etcd;
    auto options = etcd.client_options();
    const Endpoint closed{"127.0.0.1", free_port()};
    options.endpoints.insert(options.endpoints.begin(), closed);
    Client c(options);
    c.put("/f", "1");
    CHECK(c.range("/f").kvs.at(0).value == "1");
    CHECK(c.watch("/f", "", 1, 5s).size() == 1);
}

TEST_CASE("etcd Client names every endpoint when none can be reached", "[etcd][client]") {
    ClientOptions options;
    const auto a = free_port();
    const auto b = free_port();
    options.endpoints = {{"127.0.0.1", a}, {"127.0.0.1", b}};
    options.io_timeout = 2s;
    Client c(options);
    const auto start = Clock::now();
    try {
        c.range("/k");
        FAIL("range reached a closed port");
    } catch (const ptrun::rdzv::ConnectionLost& e) {
        const std::string what = e.what();
        CHECK_THAT(what, Catch::Contains("cannot reach etcd at 127.0.0.1:" + std::to_string(a) +
                                         " (connection refused), 127.0.0.1:" + std::to_string(b) +
                                         " (connection refused)"));
    }
    CHECK_THROWS_AS(c.watch("/k", "", 0, 1s), ptrun::rdzv::ConnectionLost);
    CHECK(Clock::now() - start < 2s);
}

TEST_CASE("etcd Client refuses a reply larger than max_response", "[etcd][client]") {
    EtcdCluster etcd;
    Client writer(etcd.client_options());
    writer.put("/big", std::string(64 * 1024, 'x'));
    auto options = etcd.client_options();
    options.max_response = 16 * 1024;
    Client c(options);
    CHECK_THROWS_WITH(c.range("/big"), Catch::Contains("larger than max_response (16384 bytes)"));
    CHECK_THROWS_WITH(c.watch("/big", "", 1, 5s), Catch::Contains("larger than max_response"));
    CHECK(c.range("/small").kvs.empty());  // reconnects and goes on
}

TEST_CASE("etcd Client reports a request etcd refuses", "[etcd][client]") {
    EtcdCluster etcd;
    Client c(etcd.client_options());
    std::vector<Op> ops;
    for (int i = 0; i < 129; ++i) ops.push_back(Op::put("/many/" + std::to_string(i), "v"));
    CHECK_THROWS_WITH(c.txn({}, ops), Catch::Contains("too many operations in txn request"));
}
