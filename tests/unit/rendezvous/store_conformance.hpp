#pragma once
/// Checks every Store verb against any implementation (InMemoryStore, TcpStoreClient, ...).

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv::test {

using namespace std::chrono_literals;

/// Every verb once, on a store whose keys start empty. `with_queues` = false for stores that
/// do not support queue_* and list_keys.
inline void check_store_verbs(Store& s, bool with_queues = true) {
    s.set("k1", "v1");
    CHECK(s.get("k1", 5s) == "v1");
    s.set("k1", std::string("\0bin\xff", 5));
    CHECK(s.get("k1", 5s) == std::string("\0bin\xff", 5));
    s.set("", "");  // empty key and value are legal
    CHECK(s.check({""}));

    CHECK(s.add("cnt", 5) == 5);
    CHECK(s.add("cnt", -2) == 3);
    CHECK(s.get("cnt", 5s) == "3");
    s.set("text", "abc");
    CHECK_THROWS_AS(s.add("text", 1), StoreError);

    CHECK(s.compare_set("cas", "x", "y") == "x");
    CHECK_FALSE(s.check({"cas"}));
    CHECK(s.compare_set("cas", "", "a") == "a");
    CHECK(s.compare_set("cas", "a", "b") == "b");
    CHECK(s.compare_set("cas", "a", "c") == "b");

    CHECK(s.check({}));
    CHECK(s.check({"k1", "cnt"}));
    CHECK_FALSE(s.check({"k1", "nope"}));
    s.wait({"k1", "cnt"}, 5s);

    // peek: the values now, nullopt where absent, without waiting or writing.
    CHECK(s.peek({}).empty());
    const auto keys_before_peek = s.num_keys();
    const auto peeked = s.peek({"k1", "never", "cnt"});
    REQUIRE(peeked.size() == 3);
    CHECK(peeked[0] == std::optional<std::string>(std::string("\0bin\xff", 5)));
    CHECK_FALSE(peeked[1].has_value());
    CHECK(peeked[2] == std::optional<std::string>("3"));
    CHECK_FALSE(s.check({"never"}));
    CHECK(s.num_keys() == keys_before_peek);

    s.append("log", "a");
    s.append("log", "bc");
    CHECK(s.get("log", 5s) == "abc");

    s.multi_set({"m1", "m2"}, {"1", "2"});
    CHECK(s.multi_get({"m2", "m1"}, 5s) == std::vector<std::string>{"2", "1"});
    CHECK_THROWS_AS(s.multi_set({"a"}, {}), StoreError);

    const auto before = s.num_keys();
    CHECK(s.delete_key("m1"));
    CHECK_FALSE(s.delete_key("m1"));
    CHECK(s.num_keys() == before - 1);

    if (with_queues) {
        CHECK(s.queue_len("q") == 0);
        s.queue_push("q", "first");
        s.queue_push("q", "second");
        CHECK(s.queue_len("q") == 2);
        CHECK(s.queue_pop("q", 5s) == "first");
        CHECK(s.queue_pop("q", 5s) == "second");
        CHECK_THROWS_AS(s.queue_pop("q", 50ms), StoreTimeout);
        // queue_push_many: in order, after what was there; nothing for none.
        s.queue_push("q", "zero");
        s.queue_push_many("q", {});
        s.queue_push_many("q", {"one", std::string("t\0wo", 4), "three"});
        CHECK(s.queue_len("q") == 4);
        CHECK(s.queue_pop_batch("q", 10, 5s) ==
              std::vector<std::string>{"zero", "one", std::string("t\0wo", 4), "three"});
        auto keys = s.list_keys();
        CHECK(static_cast<std::int64_t>(keys.size()) <= s.num_keys());
        CHECK(std::find(keys.begin(), keys.end(), "log") != keys.end());
    }
}

/// Blocking verbs time out naming the keys, and wake up when another thread writes.
inline void check_store_blocking(Store& s, Store& writer) {
    try {
        s.get("missing", 100ms);
        FAIL("get of a missing key returned");
    } catch (const StoreTimeout& e) {
        CHECK(e.keys() == std::vector<std::string>{"missing"});
        CHECK(e.waited() >= 100ms);
        CHECK_THAT(e.what(), Catch::Contains("'missing'") && Catch::Contains("get"));
    }
    CHECK_THROWS_AS(s.wait({"w1", "w2"}, 50ms), StoreTimeout);
    CHECK_THROWS_AS(s.multi_get({"w1"}, 50ms), StoreTimeout);

    std::exception_ptr failure;
    std::string got;
    std::thread waiter([&] {  // no Catch assertions off the main thread: Catch is not thread-safe
        try {
            got = s.get("later", 20s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    writer.set("later", "here");
    waiter.join();
    if (failure) std::rethrow_exception(failure);
    CHECK(got == "here");
    // Still usable after the timeouts above.
    CHECK(s.get("later", 5s) == "here");
}

/// queue_pop_batch takes at most `max` (at least 1) in order and times out on an empty queue.
inline void check_store_queue_batch(Store& s) {
    for (int i = 0; i < 5; ++i) s.queue_push("bq", "e" + std::to_string(i));
    CHECK(s.queue_pop_batch("bq", 3, 5s) == std::vector<std::string>{"e0", "e1", "e2"});
    CHECK(s.queue_pop_batch("bq", 100, 5s) == std::vector<std::string>{"e3", "e4"});
    CHECK_THROWS_AS(s.queue_pop_batch("bq", 100, 50ms), StoreTimeout);
    s.queue_push("bq", "late");
    CHECK(s.queue_pop_batch("bq", 0, 5s) == std::vector<std::string>{"late"});
}

/// How a get() of a key that never comes, on another thread, failed once `stop` ran on this one
/// (before the get blocked or after: either way it must end), within 10 s.
template <typename Stop>
std::exception_ptr blocked_get_failure(Store& s, Stop&& stop) {
    std::exception_ptr failure;
    std::thread waiter([&] {
        try {
            s.get("never", 60s);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    const auto start = std::chrono::steady_clock::now();
    stop();
    waiter.join();
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    REQUIRE(failure);
    return failure;
}

/// interrupt() from another thread fails a call blocked on `s` at once with ConnectionLost, and
/// every later call on `s`; `other` (another client of the same data) keeps working.
inline void check_store_interrupt(Store& s, Store& other) {
    const auto failure = blocked_get_failure(s, [&] { s.interrupt(); });
    CHECK_THROWS_AS(std::rethrow_exception(failure), ConnectionLost);
    CHECK_THROWS_AS(s.set("after", "1"), ConnectionLost);
    CHECK_THROWS_AS(s.queue_pop_batch("q", 1, 5s), ConnectionLost);
    other.set("after", "1");
    CHECK(other.get("after", 5s) == "1");
}

/// Store::wake on a wakeable store: a wait in progress (or the next one) ends with StoreWoken
/// long before its time, the store stays usable, and a key that arrives is still read.
inline void check_store_wake(Store& s, Store& writer) {
    REQUIRE(s.wakeable());
    const auto failure = blocked_get_failure(s, [&] { s.wake(); });
    CHECK_THROWS_AS(std::rethrow_exception(failure), StoreWoken);
    writer.set("woken", "1");
    CHECK(s.get("woken", 5s) == "1");
    CHECK(s.add("woken-count", 2) == 2);
    s.wake();  // no wait in progress: the next one ends at once
    const auto next = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(s.wait({"never"}, 60s), StoreWoken);
    CHECK(std::chrono::steady_clock::now() - next < 10s);
    writer.set("later", "2");
    CHECK(s.multi_get({"woken", "later"}, 5s) == std::vector<std::string>{"1", "2"});
}

/// gloo's spawnThreads: runs fn(rank) on `size` threads, rethrows the first failure.
inline void spawn_threads(int size, const std::function<void(int)>& fn) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank) {
        threads.emplace_back([&, rank] {
            try {
                fn(rank);
            } catch (...) {
                errors[static_cast<std::size_t>(rank)] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace ptrun::rdzv::test
