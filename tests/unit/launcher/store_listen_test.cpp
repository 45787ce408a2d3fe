#include "ptrun/launcher/membership/store_listen.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;

TEST_CASE("store listen: a numeric endpoint is listened on as it is", "[launcher][listen]") {
    CHECK(choose_listen_address("127.0.0.1", true, {{"127.0.0.1", true, true}}, "n1").address ==
          "127.0.0.1");
    CHECK(choose_listen_address("10.0.0.1", true, {{"10.0.0.1", true, false}}, "n1").address ==
          "10.0.0.1");
    auto forced = choose_listen_address("10.9.9.9", true, {{"10.9.9.9", false, false}}, "n1");
    CHECK(forced.address.empty());  // is_host=true with an address of another machine
    CHECK_THAT(forced.why, Catch::Contains("not an address of this machine"));
}

TEST_CASE("store listen: a name is listened on where it resolves here", "[launcher][listen]") {
    CHECK(choose_listen_address("node1", false, {{"10.0.0.1", true, false}}, "node1").address ==
          "10.0.0.1");
    CHECK(choose_listen_address("localhost", false,
                                {{"127.0.0.1", true, true}, {"::1", true, true}}, "n1")
              .address == "127.0.0.1");
    CHECK(choose_listen_address("node1", false,
                                {{"127.0.1.1", true, true}, {"10.0.0.1", true, false}}, "node1")
              .address == "10.0.0.1");
}

TEST_CASE("store listen: the own hostname on loopback only means every interface",
          "[launcher][listen]") {
    auto c = choose_listen_address("node1", false, {{"127.0.1.1", true, true}}, "node1.cluster");
    CHECK(c.address.empty());
    CHECK_THAT(c.why, Catch::Contains("127.0.1.1") && Catch::Contains("cannot reach"));
}

TEST_CASE("store listen: resolving here tells loopback and local addresses apart",
          "[launcher][listen]") {
    bool numeric = false;
    auto r = resolve_for_listen("127.0.0.1", numeric);
    CHECK(numeric);
    REQUIRE(r.size() == 1);
    CHECK(r[0].local);
    CHECK(r[0].loopback);
    r = resolve_for_listen("192.0.2.1", numeric);  // TEST-NET-1: never an address of this machine
    REQUIRE(r.size() == 1);
    CHECK_FALSE(r[0].local);
}
