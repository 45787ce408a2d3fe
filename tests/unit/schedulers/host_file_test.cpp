#include "ptrun/schedulers/host_file.hpp"

#include <catch2/catch.hpp>

#include "ptrun/env/env_map.hpp"

using namespace ptrun::schedulers;
using ptrun::env::ParseError;

TEST_CASE("host file: hosts in order of first appearance with their slots",
          "[schedulers][hostfile]") {
    auto hosts = parse_host_file("b\na\nb  slots=4\n\n# comment\na # trailing\nc", "F");
    REQUIRE(hosts.size() == 3);
    CHECK(hosts[0] == HostSlots{"b", 2});
    CHECK(hosts[1] == HostSlots{"a", 2});
    CHECK(hosts[2] == HostSlots{"c", 1});
    CHECK(parse_host_file("fd00::1\r\n10.0.0.2\n", "F")[0].host == "fd00::1");
}

TEST_CASE("host file: hostile text is refused naming the file and line",
          "[schedulers][hostfile][hostile]") {
    CHECK_THROWS_WITH(parse_host_file("", "PBS_NODEFILE='x'"),
                      Catch::Contains("PBS_NODEFILE='x'") && Catch::Contains("names no host"));
    CHECK_THROWS_WITH(parse_host_file("ok\nbad\x01name\n", "F"),
                      Catch::Contains("line 2") && Catch::Contains("bad?name"));
    CHECK_THROWS_WITH(parse_host_file(std::string(300, 'a'), "F"), Catch::Contains("255"));
    CHECK_THROWS_WITH(parse_host_file("a;b", "F"), Catch::Contains("not a host name"));
    std::string many;
    for (std::size_t i = 0; i <= kMaxHostFileHosts; ++i) many += "n" + std::to_string(i) + "\n";
    CHECK_THROWS_WITH(parse_host_file(many, "F"), Catch::Contains("more than 65536 hosts"));
    std::string repeated;  // many lines, few hosts: fine
    for (int i = 0; i < 200000; ++i) repeated += (i % 2 ? "a\n" : "b\n");
    CHECK(parse_host_file(repeated, "F").size() == 2);
}

TEST_CASE("host count pairs: LSB_MCPU_HOSTS", "[schedulers][hostfile]") {
    auto hosts = parse_host_count_pairs("batch1 1 c01 42", "LSB_MCPU_HOSTS");
    REQUIRE(hosts.size() == 2);
    CHECK(hosts[1] == HostSlots{"c01", 42});
    CHECK_THROWS_AS(parse_host_count_pairs("c01", "L"), ParseError);
    CHECK_THROWS_AS(parse_host_count_pairs("c01 x", "L"), ParseError);
    CHECK_THROWS_AS(parse_host_count_pairs("c01 99999999", "L"), ParseError);
    CHECK_THROWS_AS(parse_host_count_pairs("", "L"), ParseError);
}
