#include "ptrun/launcher/endpoint.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/usage_error.hpp"

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
