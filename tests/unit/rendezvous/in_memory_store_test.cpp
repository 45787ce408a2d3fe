#include "ptrun/rendezvous/in_memory_store.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "store_conformance.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

TEST_CASE("InMemoryStore implements every verb", "[rdzv][memory]") {
    InMemoryStore s;
    check_store_verbs(s);
}

TEST_CASE("InMemoryStore blocks without polling and times out naming keys", "[rdzv][memory]") {
    InMemoryStore s;
    check_store_blocking(s, s);
}

TEST_CASE("InMemoryStore counts 16 threads through an add/wait barrier", "[rdzv][memory]") {
    InMemoryStore s;
    constexpr int kRanks = 16;
    spawn_threads(kRanks, [&](int rank) {
        s.set("rank/" + std::to_string(rank), std::to_string(rank));
        if (s.add("arrived", 1) == kRanks) s.set("go", "1");
        s.wait({"go"}, 20s);
    });
    CHECK(s.get("arrived", 1s) == std::to_string(kRanks));
}

TEST_CASE("InMemoryStore clear starts a fresh namespace", "[rdzv][memory]") {
    InMemoryStore s;
    s.set("a", "1");
    s.queue_push("q", "x");
    s.clear();
    CHECK(s.num_keys() == 0);
    CHECK(s.queue_len("q") == 0);
}

TEST_CASE("InMemoryStore pops a queue in batches", "[rdzv][memory]") {
    InMemoryStore s;
    check_store_queue_batch(s);
}

TEST_CASE("InMemoryStore wake cuts one handle's wait short", "[rdzv][memory]") {
    InMemoryStore s;
    auto handle = s.connect();
    check_store_wake(*handle, s);
}

TEST_CASE("InMemoryStore interrupt fails one handle's calls, not another's", "[rdzv][memory]") {
    InMemoryStore s;
    auto handle = s.connect();
    handle->set("shared", "yes");
    CHECK(s.get("shared", 1s) == "yes");
    check_store_interrupt(*handle, s);
}
