#include "ptrun/slurm/hostlist.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

using namespace ptrun::slurm;
using Hosts = std::vector<std::string>;

namespace {

/// The ParseError `expr` raises (its offset and message), or fails the test when none is raised.
ParseError error_of(std::string_view expr, std::size_t max_hosts = kMaxHosts) {
    try {
        expand_hostlist(expr, max_hosts);
    } catch (const ParseError& e) {
        return e;
    }
    FAIL("expand_hostlist('" << std::string(expr) << "') did not throw");
    throw;  // unreachable: FAIL throws
}

}  // namespace

// The `scontrol show hostnames` table of slurm-cluster-notes.md (SLURM 22.05).
TEST_CASE("expand_hostlist expands every example of the notes as scontrol does", "[slurm]") {
    CHECK(expand_hostlist("node[1-2]") == Hosts{"node1", "node2"});
    CHECK(expand_hostlist("node[01-03]") == Hosts{"node01", "node02", "node03"});
    CHECK(expand_hostlist("node[009-011]") == Hosts{"node009", "node010", "node011"});
    CHECK(expand_hostlist("node[8-11]") == Hosts{"node8", "node9", "node10", "node11"});
    CHECK(expand_hostlist("node[1,3,5-6]") == Hosts{"node1", "node3", "node5", "node6"});
    CHECK(expand_hostlist("n1,n2,m[3-4]") == Hosts{"n1", "n2", "m3", "m4"});
    CHECK(expand_hostlist("node[1-2],login1") == Hosts{"node1", "node2", "login1"});
    CHECK(expand_hostlist("a[1-2]b[3-4]") == Hosts{"a1b3", "a1b4", "a2b3", "a2b4"});
    CHECK(expand_hostlist("rack[1-2]-node[01-02]") ==
          Hosts{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
}

// Further cases checked against `scontrol show hostnames` 22.05 while writing this module.
TEST_CASE("expand_hostlist agrees with scontrol on the less common forms", "[slurm]") {
    CHECK(expand_hostlist("node1").size() == 1);
    CHECK(expand_hostlist("n[1]") == Hosts{"n1"});
    CHECK(expand_hostlist("n[007]") == Hosts{"n007"});
    CHECK(expand_hostlist("[1-2]") == Hosts{"1", "2"});
    CHECK(expand_hostlist("n[1-2][3-4]") == Hosts{"n13", "n14", "n23", "n24"});
    CHECK(expand_hostlist("n[1-2]x[3]") == Hosts{"n1x3", "n2x3"});
    CHECK(expand_hostlist("n[2,1]") == Hosts{"n2", "n1"});
    CHECK(expand_hostlist("n[1-3],n2") == Hosts{"n1", "n2", "n3", "n2"});
    CHECK(expand_hostlist("n-[1-2]") == Hosts{"n-1", "n-2"});
    CHECK(expand_hostlist("node1 node2") == Hosts{"node1", "node2"});
    CHECK(expand_hostlist("n[1-2] m") == Hosts{"n1", "n2", "m"});
    CHECK(expand_hostlist(" a , b ") == Hosts{"a", "b"});
    CHECK(expand_hostlist("").empty());
    CHECK(expand_hostlist("   ").empty());
}

TEST_CASE("expand_hostlist takes the zero-padding width from the low bound", "[slurm]") {
    CHECK(expand_hostlist("n[5-05]") == Hosts{"n5"});
    CHECK(expand_hostlist("n[05-5]") == Hosts{"n05"});
    CHECK(expand_hostlist("n[1-010]").back() == "n10");
    CHECK(expand_hostlist("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
    CHECK(expand_hostlist("n[0-1]") == Hosts{"n0", "n1"});
}

TEST_CASE("expand_hostlist rejects a reversed range and names it", "[slurm]") {
    auto e = error_of("node[2-1]");
    CHECK(e.pos == 5);
    CHECK(e.reason == "invalid range '2-1' (start above end)");
    CHECK_THAT(e.what(), Catch::Contains("hostlist 'node[2-1]': invalid range '2-1'"));
    CHECK_THAT(e.what(), Catch::EndsWith("at offset 5"));
}

TEST_CASE("expand_hostlist rejects text after the last bracket as scontrol does", "[slurm]") {
    auto e = error_of("gpu-[1-2]-ib");
    CHECK(e.pos == 9);
    CHECK_THAT(e.reason, Catch::Contains("'-ib' after the last ']'"));
    CHECK(error_of("a[1-2]b").pos == 6);
    CHECK(error_of("x[1-2]y[3-4]z").pos == 12);
    CHECK(error_of("n[1-2]-ib,m1").pos == 6);
}

TEST_CASE("expand_hostlist rejects unbalanced and nested brackets", "[slurm]") {
    CHECK(error_of("n[1-3").reason == "unclosed '['");
    CHECK(error_of("n[1-3").pos == 1);
    CHECK(error_of("a1,n[1-3,m2").pos == 4);
    CHECK(error_of("n1-3]").reason == "unmatched ']'");
    CHECK(error_of("n1-3]").pos == 4);
    CHECK(error_of("]").pos == 0);
    CHECK(error_of("n[[1-2]]").reason == "'[' inside brackets");
    CHECK(error_of("n[[1-2]]").pos == 2);
    CHECK(error_of("n[1-2,m[3]").pos == 7);
}

TEST_CASE("expand_hostlist rejects empty elements and empty ranges", "[slurm]") {
    CHECK(error_of("a,,b").reason == "empty host name");
    CHECK(error_of("a,,b").pos == 2);
    CHECK(error_of(",a").pos == 0);
    CHECK(error_of("a,").pos == 2);
    CHECK(error_of("a, ,b").pos == 3);
    CHECK(error_of(",").pos == 0);
    CHECK(error_of("n[]").reason == "empty range");
    CHECK(error_of("n[]").pos == 2);
    CHECK(error_of("n[1,,2]").pos == 4);
    CHECK(error_of("n[1,]").pos == 4);
}

TEST_CASE("expand_hostlist rejects negative numbers and anything but digits in a range",
          "[slurm]") {
    CHECK(error_of("n[-1-2]").reason == "invalid range '-1-2' (negative number)");
    CHECK(error_of("n[-1-2]").pos == 2);
    CHECK(error_of("n[1--2]").reason == "invalid range '1--2' (negative number)");
    CHECK(error_of("n[-3]").reason == "invalid range '-3' (negative number)");
    CHECK(error_of("n[1-]").reason == "invalid range '1-' (not a number)");
    CHECK(error_of("n[a-b]").reason == "invalid range 'a-b' (not a number)");
    CHECK(error_of("n[1-2x]").reason == "invalid range '1-2x' (not a number)");
    CHECK(error_of("n[ 1-2]").reason == "invalid range ' 1-2' (not a number)");
    CHECK(error_of("n[+1-2]").reason == "invalid range '+1-2' (not a number)");
    CHECK(error_of("n[1-2-3]").reason == "invalid range '1-2-3' (not a number)");
    CHECK(error_of("n[0-1234567890123456789]").reason ==
          "invalid range '0-1234567890123456789' (number too long)");
}

TEST_CASE("expand_hostlist allows exactly max_hosts names", "[slurm]") {
    auto hosts = expand_hostlist("n[0-65535]");
    CHECK(hosts.size() == kMaxHosts);
    CHECK(hosts.back() == "n65535");
    CHECK(expand_hostlist("n[1-2]", 2).size() == 2);
    CHECK(expand_hostlist("a,b", 2).size() == 2);
}

TEST_CASE("expand_hostlist refuses a huge range at once, before allocating", "[slurm]") {
    auto start = std::chrono::steady_clock::now();
    auto e = error_of("n[0-99999999]");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100));
    CHECK(e.reason == "expands to more than 65536 hosts");
    CHECK(e.pos == 0);
    CHECK(error_of("n[0-999999999999999999]").reason == "expands to more than 65536 hosts");
    CHECK(error_of("n[0-65536]").reason == "expands to more than 65536 hosts");
}

TEST_CASE("expand_hostlist caps the whole expansion, products and lists included", "[slurm]") {
    CHECK(error_of("a[0-65535]b[0-65535]").reason == "expands to more than 65536 hosts");
    CHECK(error_of("a[0-999999999].b[0-9]").reason == "expands to more than 65536 hosts");
    CHECK(error_of("n[0-40000],m[0-40000]").pos == 11);
    CHECK(error_of("n[1-3]", 2).reason == "expands to more than 2 hosts");
    CHECK(error_of("a,b,c", 2).pos == 4);
    CHECK(error_of("a", 0).reason == "expands to more than 0 hosts");
}

// The `scontrol show hostlist` examples of slurm-cluster-notes.md.
TEST_CASE("compress_hostlist writes every example of the notes as scontrol does", "[slurm]") {
    CHECK(compress_hostlist({"node1", "node2", "node3", "node5"}) == "node[1-3,5]");
    CHECK(compress_hostlist({"node01", "node02", "node10"}) == "node[01-02,10]");
    CHECK(compress_hostlist({"node9", "node10"}) == "node[9-10]");
    CHECK(compress_hostlist({"a1b3", "a1b4", "a2b3", "a2b4"}) == "a1b[3-4],a2b[3-4]");
    CHECK(compress_hostlist({"node2", "node1"}) == "node[2,1]");
}

// Further cases checked against `scontrol show hostlist` 22.05 while writing this module.
TEST_CASE("compress_hostlist agrees with scontrol on mixed names, widths and repeats", "[slurm]") {
    CHECK(compress_hostlist({}).empty());
    CHECK(compress_hostlist({"n1"}) == "n1");
    CHECK(compress_hostlist({"n007"}) == "n007");
    CHECK(compress_hostlist({"abc"}) == "abc");
    CHECK(compress_hostlist({"n1", "m1", "n2"}) == "n1,m1,n2");
    CHECK(compress_hostlist({"n1", "n1"}) == "n[1,1]");
    CHECK(compress_hostlist({"n1", "n2", "n3", "n2"}) == "n[1-3,2]");
    CHECK(compress_hostlist({"n1", "n2", "n3", "m1", "n4"}) == "n[1-3],m1,n4");
    CHECK(compress_hostlist({"n5", "n6", "n1", "n2"}) == "n[5-6,1-2]");
    CHECK(compress_hostlist({"n9", "n010"}) == "n[9,010]");
    CHECK(compress_hostlist({"n08", "n9"}) == "n[08,9]");
    CHECK(compress_hostlist({"n099", "n100"}) == "n[099-100]");
    CHECK(compress_hostlist({"n00", "n01"}) == "n[00-01]");
    CHECK(compress_hostlist({"1", "2", "3"}) == "[1-3]");
    CHECK(compress_hostlist({"n-1", "n-2"}) == "n-[1-2]");
    CHECK(compress_hostlist({"n1.ib", "n2.ib"}) == "n1.ib,n2.ib");
    CHECK(compress_hostlist({"login", "node1"}) == "login,node1");
}

TEST_CASE("compress_hostlist output expands back to the same names in the same order", "[slurm]") {
    const std::vector<Hosts> cases = {
        {"node1", "node2", "node3", "node5"},
        {"n9", "n10", "n011", "n012", "n13"},
        {"a1b3", "a1b4", "a2b3", "a2b4", "login", "x", "x1"},
        {"n3", "n2", "n1", "n1", "n0", "n00", "n000"},
        {"rack1-node01", "rack1-node02", "rack2-node01"},
    };
    for (const auto& hosts : cases) {
        CAPTURE(compress_hostlist(hosts));
        CHECK(expand_hostlist(compress_hostlist(hosts)) == hosts);
    }
    auto big = expand_hostlist("gpu[0000-4095]");
    CHECK(compress_hostlist(big) == "gpu[0000-4095]");
}

TEST_CASE("compress_hostlist refuses names a hostlist cannot write", "[slurm]") {
    CHECK_THROWS_AS(compress_hostlist({"a", ""}), ParseError);
    CHECK_THROWS_WITH(compress_hostlist({"x[1"}),
                      Catch::Contains("host name 'x[1'") && Catch::Contains("at offset 1"));
    CHECK_THROWS_AS(compress_hostlist({"a,b"}), ParseError);
    CHECK_THROWS_AS(compress_hostlist({"a b"}), ParseError);
    CHECK_THROWS_AS(compress_hostlist({"a]"}), ParseError);
}
