#include "ptrun/sys/route.hpp"

#include <catch2/catch.hpp>
#include <string>

using ptrun::sys::route_source_address;

TEST_CASE("the route to a loopback address starts at loopback", "[sys]") {
    CHECK(route_source_address("127.0.0.1", 29400) == "127.0.0.1");
    CHECK(route_source_address("127.0.0.2", 1) == "127.0.0.1");
}

TEST_CASE("no route, or no name, gives no address and says why", "[sys]") {
    std::string why;
    // Broadcast: the kernel refuses the connect (EACCES without SO_BROADCAST), with no DNS.
    CHECK(route_source_address("255.255.255.255", 9, &why).empty());
    CHECK(why == "no local route to '255.255.255.255'");
    CHECK(route_source_address("", 9, &why).empty());  // refused before any lookup
    CHECK(why == "cannot resolve ''");
}
