#include "ptrun/launcher/cli/endpoint.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

TEST_CASE("endpoint: HOST[:PORT] with IPv6 in brackets", "[launcher][endpoint]") {
    CHECK(parse_endpoint("node1:29411", 29400, "rdzv-endpoint") == HostPort{"node1", 29411});
    CHECK(parse_endpoint("node1", 29400, "rdzv-endpoint") == HostPort{"node1", 29400});
    CHECK(parse_endpoint("[fd77::10]:5", 29400, "rdzv-endpoint") == HostPort{"fd77::10", 5});
    CHECK(parse_endpoint("[fd77::10]", 29400, "rdzv-endpoint") == HostPort{"fd77::10", 29400});
    CHECK(parse_endpoint("fd77::10", 29400, "rdzv-endpoint") == HostPort{"fd77::10", 29400});
    CHECK(format_endpoint("fd77::10", 5) == "[fd77::10]:5");
    CHECK(format_endpoint("h", 5) == "h:5");
    for (const char* bad : {"", ":1", "h:70000", "h:", "[::1", "[::1]x", "[]:1"}) {
        CHECK_THROWS_AS(parse_endpoint(bad, 1, "rdzv-endpoint"), UsageError);
    }
    CHECK_THROWS_WITH(parse_endpoint("h:x", 1, "rdzv-endpoint"),
                      Catch::Contains("--rdzv-endpoint 'h:x'"));
}

TEST_CASE("endpoint: split_endpoint tells a missing port from port 0", "[launcher][endpoint]") {
    CHECK_FALSE(split_endpoint("node1", "rdzv-endpoint").port);
    CHECK_FALSE(split_endpoint("[fd00::1]", "rdzv-endpoint").port);
    CHECK_FALSE(split_endpoint("fd00::1", "rdzv-endpoint").port);
    CHECK(split_endpoint("node1:0", "rdzv-endpoint").port == 0);
    CHECK(split_endpoint("[fd00::1]:29400", "rdzv-endpoint").port == 29400);
    CHECK(split_endpoint("[fd00::1]:29400", "rdzv-endpoint").host == "fd00::1");
    CHECK(parse_endpoint("node1", 29400, "rdzv-endpoint") == HostPort{"node1", 29400});
    CHECK(parse_endpoint("node1:0", 29400, "rdzv-endpoint") == HostPort{"node1", 0});
}
