#include "ptrun/etcd/etcd_store.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "etcd_server.hpp"
#include "store_conformance.hpp"

using namespace ptrun::etcd;
using namespace ptrun::etcd::test;
using namespace ptrun::rdzv::test;
using ptrun::rdzv::StoreTimeout;

namespace {

EtcdStoreOptions store_options(const EtcdCluster& etcd, std::string root = "/ptrun/run1/") {
    EtcdStoreOptions o;
    o.client = etcd.client_options();
    o.root = std::move(root);
    return o;
}

}  // namespace

TEST_CASE("etcd EtcdStore implements every verb", "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    check_store_verbs(s);
    // Keys live under the root; nothing leaks outside it.
    CHECK(s.client().range("/ptrun/run1/k1").count == 1);
    CHECK(s.client().range("/", prefix_end("/ptrun/run1/")).count ==
          s.client().range("/ptrun/run1/", prefix_end("/ptrun/run1/")).count);
}

TEST_CASE("etcd EtcdStore blocks by watching and times out naming keys", "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    EtcdStore writer(store_options(etcd));
    check_store_blocking(s, writer);
    // wait() of several keys wakes when the last of them appears.
    std::exception_ptr failure;
    std::thread waiter([&] {
        try {
            s.wait({"w/a", "w/b", "z"}, 20s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    writer.set("w/a", "1");
    writer.set("z", "1");
    writer.set("w/b", "1");
    waiter.join();
    if (failure) std::rethrow_exception(failure);
}

TEST_CASE("etcd EtcdStore pops a queue in batches, in push order", "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    check_store_queue_batch(s);
    for (int i = 0; i < 20; ++i) s.queue_push("fifo", std::to_string(i));
    CHECK(s.queue_len("fifo") == 20);
    s.set("fifo/q/not-an-item", "x");  // a key that looks like the queue's prefix
    std::vector<std::string> got;
    while (got.size() < 20) {
        auto batch = s.queue_pop_batch("fifo", 7, 5s);
        CHECK(batch.size() <= 7);
        got.insert(got.end(), batch.begin(), batch.end());
    }
    for (int i = 0; i < 20; ++i) CHECK(got[static_cast<std::size_t>(i)] == std::to_string(i));
    CHECK(s.queue_len("fifo") == 0);
    CHECK(s.get("fifo/q/not-an-item", 1s) == "x");

    // A consumer blocked on an empty queue wakes for a push from another store.
    EtcdStore pusher(store_options(etcd));
    std::string popped;
    std::exception_ptr failure;
    std::thread consumer([&] {
        try {
            popped = s.queue_pop("later", 20s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    pusher.queue_push("later", "here");
    consumer.join();
    if (failure) std::rethrow_exception(failure);
    CHECK(popped == "here");

    // Queue items are no keys; a non-empty queue counts as existing for check().
    s.queue_push("jobs", "1");
    const auto keys = s.list_keys();
    CHECK(std::none_of(keys.begin(), keys.end(),
                       [](const std::string& k) { return k.find("jobs") != std::string::npos; }));
    CHECK(s.num_keys() == static_cast<std::int64_t>(keys.size()));
    CHECK(s.check({"jobs"}));
    CHECK(s.get("jobs", 1s) == "");
}

TEST_CASE("etcd EtcdStore add is atomic across clients", "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore a(store_options(etcd));
    EtcdStore b(store_options(etcd));
    std::vector<std::int64_t> seen_a, seen_b;
    spawn_threads(2, [&](int rank) {
        auto& store = rank == 0 ? a : b;
        auto& seen = rank == 0 ? seen_a : seen_b;
        for (int i = 0; i < 100; ++i) seen.push_back(store.add("counter", 1));
    });
    CHECK(a.get("counter", 1s) == "200");
    std::set<std::int64_t> all(seen_a.begin(), seen_a.end());
    all.insert(seen_b.begin(), seen_b.end());
    CHECK(all.size() == 200);  // every add saw a value of its own
    CHECK(*all.begin() == 1);
    CHECK(*all.rbegin() == 200);
}

TEST_CASE("etcd EtcdStore add counts from what is there after another writer, a set, a delete",
          "[etcd][store]") {
    // add compares and swaps on its own last write without reading first: whatever happened to
    // the counter since then must still be counted from.
    EtcdCluster etcd;
    EtcdStore a(store_options(etcd));
    EtcdStore b(store_options(etcd));
    CHECK(a.add("n", 1) == 1);
    CHECK(a.add("n", 1) == 2);
    CHECK(b.add("n", 5) == 7);
    CHECK(a.add("n", 1) == 8);
    b.set("n", "100");
    CHECK(a.add("n", 1) == 101);
    CHECK(b.delete_key("n"));
    CHECK(a.add("n", 2) == 2);
    CHECK(b.get("n", 1s) == "2");
}

TEST_CASE("etcd EtcdStore multi_set beyond one transaction's operations", "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    std::vector<std::string> keys, values;
    for (int i = 0; i < 300; ++i) {
        keys.push_back("m/" + std::to_string(i));
        values.push_back(std::to_string(i * i));
    }
    s.multi_set(keys, values);
    CHECK(s.multi_get(keys, 5s) == values);
    CHECK(s.num_keys() == 300);
    CHECK(s.check(keys));
}

TEST_CASE("etcd EtcdStore interrupt fails a blocked get at once, not another store",
          "[etcd][store]") {
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    EtcdStore other(store_options(etcd));
    check_store_interrupt(s, other);
}

TEST_CASE("etcd EtcdStore with a fence writes while the fence key lives", "[etcd][store][fence]") {
    EtcdCluster etcd;
    Client leader(etcd.client_options());
    leader.put("/ptrun/run1-leader", "me");
    const auto created = leader.range("/ptrun/run1-leader").kvs.at(0).create_revision;
    auto options = store_options(etcd);
    options.fence = Fence{"/ptrun/run1-leader", created};
    EtcdStore s(options);
    check_store_verbs(s);
    leader.put("/ptrun/run1-leader", "me again");  // a new value keeps the create revision
    s.set("still", "ok");

    SECTION("deleted") { leader.delete_range("/ptrun/run1-leader"); }
    SECTION("re-created") {
        leader.delete_range("/ptrun/run1-leader");
        leader.put("/ptrun/run1-leader", "someone else");
    }
    CHECK_THROWS_WITH(s.set("k", "v"), Catch::Contains("set: this node no longer leads") &&
                                           Catch::Contains("/ptrun/run1-leader"));
    CHECK_THROWS_AS(s.add("cnt", 1), FenceLost);
    CHECK_THROWS_AS(s.compare_set("cas", "b", "c"), FenceLost);
    CHECK_THROWS_AS(s.delete_key("still"), FenceLost);
    CHECK_THROWS_AS(s.append("log", "x"), FenceLost);
    CHECK_THROWS_AS(s.multi_set({"m1"}, {"v"}), FenceLost);
    CHECK_THROWS_AS(s.queue_push("q", "x"), FenceLost);
    EtcdStore unfenced(store_options(etcd));
    unfenced.queue_push("q", "x");
    CHECK_THROWS_AS(s.queue_pop("q", 1s), FenceLost);
    CHECK(unfenced.queue_len("q") == 1);  // the fenced pop took nothing
    CHECK(s.get("still", 1s) == "ok");    // reads need no fence
}

TEST_CASE("etcd EtcdStore waits again for keys it timed out on by watching first",
          "[etcd][store]") {
    // A join's admission is waited for in chunks: each chunk that ends without it costs a read
    // and a watch, and the next one a watch and the read once it is set up (at scale the read
    // before a watch is always read again, as something was written meanwhile); no read after
    // a watch that ran to its deadline.
    EtcdCluster etcd;
    EtcdStore s(store_options(etcd));
    auto before = etcd.handled();
    auto watches = etcd.started();
    CHECK_THROWS_AS(s.get("admit/1", 300ms), StoreTimeout);
    CHECK(EtcdCluster::calls_since(before, etcd.handled(), "Txn") == 1);
    CHECK(EtcdCluster::calls_since(watches, etcd.started(), "Watch") == 1);

    before = etcd.handled();
    watches = etcd.started();
    CHECK_THROWS_AS(s.get("admit/1", 300ms), StoreTimeout);
    CHECK(EtcdCluster::calls_since(before, etcd.handled(), "Txn") == 1);  // the watch's catch-up
    CHECK(EtcdCluster::calls_since(watches, etcd.started(), "Watch") == 1);

    // Set meanwhile: the catch-up read after the watch finds it.
    EtcdStore writer(store_options(etcd));
    writer.set("admit/1", "yes");
    CHECK(s.get("admit/1", 5s) == "yes");
    // A wait that may not wait still reads.
    CHECK_THROWS_AS(s.get("other", 300ms), StoreTimeout);
    writer.set("other", "here");
    CHECK(s.get("other", 0ms) == "here");
}
