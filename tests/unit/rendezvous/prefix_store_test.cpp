#include "ptrun/rendezvous/prefix_store.hpp"

#include <catch2/catch.hpp>

#include "ptrun/rendezvous/in_memory_store.hpp"
#include "store_conformance.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

TEST_CASE("PrefixStore maps keys with torch's prefix/key rule and composes", "[rdzv][prefix]") {
    InMemoryStore inner;
    PrefixStore pg("default_pg", inner);
    PrefixStore worker("/worker/attempt_0", pg);
    worker.set("0", "blob");
    CHECK(inner.get("default_pg//worker/attempt_0/0", 1s) == "blob");
    CHECK(worker.full_key("k") == "/worker/attempt_0/k");
    PrefixStore torch_slash("", inner);  // torch's TCPStore "/" prefix
    torch_slash.set("k1", "v");
    CHECK(inner.check({"/k1"}));
}

TEST_CASE("PrefixStore forwards every verb under its prefix", "[rdzv][prefix]") {
    InMemoryStore inner;
    inner.set("outside", "x");
    PrefixStore p("round/3", inner);
    check_store_verbs(p);
    check_store_queue_batch(p);
    CHECK(inner.queue_len("round/3/bq") == 0);
    CHECK(inner.check({"round/3/k1", "round/3/cnt"}));
    for (const auto& k : p.list_keys()) CHECK(inner.check({"round/3/" + k}));
    CHECK_FALSE(p.check({"outside"}));
}

TEST_CASE("PrefixStore timeouts name the full key", "[rdzv][prefix]") {
    InMemoryStore inner;
    PrefixStore p("pg", inner);
    CHECK_THROWS_WITH(p.wait({"r0"}, 20ms), Catch::Contains("'pg/r0'"));
}

TEST_CASE("PrefixStore interrupt interrupts its inner store", "[rdzv][prefix]") {
    InMemoryStore data;
    auto inner = data.connect();
    PrefixStore p("pg", *inner);
    check_store_interrupt(p, data);
    CHECK_THROWS_AS(inner->get("pg/after", 1s), ConnectionLost);
}
