#include "ptrun/slurm/tasks_per_node.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace ptrun::slurm;
using Counts = std::vector<int>;

namespace {

ParseError error_of(std::string_view text, std::size_t max_nodes = kMaxHosts) {
    try {
        parse_tasks_per_node(text, max_nodes);
    } catch (const ParseError& e) {
        return e;
    }
    FAIL("parse_tasks_per_node('" << std::string(text) << "') did not throw");
    throw;  // unreachable: FAIL throws
}

}  // namespace

// The SLURM_TASKS_PER_NODE formats of slurm-cluster-notes.md.
TEST_CASE("parse_tasks_per_node reads every format of the notes", "[slurm]") {
    CHECK(parse_tasks_per_node("2") == Counts{2});
    CHECK(parse_tasks_per_node("1(x2)") == Counts{1, 1});
    CHECK(parse_tasks_per_node("2(x2)") == Counts{2, 2});
    CHECK(parse_tasks_per_node("2,1") == Counts{2, 1});
    CHECK(parse_tasks_per_node("3(x2),1") == Counts{3, 3, 1});
}

TEST_CASE("parse_tasks_per_node reads long mixed lists in node order", "[slurm]") {
    CHECK(parse_tasks_per_node("1,2(x3),4,5(x1)") == Counts{1, 2, 2, 2, 4, 5});
    CHECK(parse_tasks_per_node("8(x4096)").size() == 4096);
    CHECK(parse_tasks_per_node("65536") == Counts{65536});
}

TEST_CASE("parse_tasks_per_node rejects empty lists and empty elements", "[slurm]") {
    CHECK(error_of("").reason == "empty list");
    CHECK(error_of("2,").reason == "empty element");
    CHECK(error_of("2,").pos == 2);
    CHECK(error_of("2,,1").pos == 2);
    CHECK(error_of(",2").reason == "expected a count, found ','");
}

TEST_CASE("parse_tasks_per_node rejects counts that are not positive integers", "[slurm]") {
    CHECK(error_of("0").reason == "count 0 is not from 1 to 65536");
    CHECK(error_of("65537").reason == "count 65537 is not from 1 to 65536");
    CHECK(error_of("-1").reason == "expected a count, found '-'");
    CHECK(error_of("two").pos == 0);
    CHECK(error_of("1,x").pos == 2);
    CHECK(error_of(" 2").pos == 0);
    CHECK(error_of("99999999999").reason == "count is too large");
}

TEST_CASE("parse_tasks_per_node rejects malformed repeats", "[slurm]") {
    CHECK(error_of("1(x0)").reason == "repeat (x0) names no node");
    CHECK(error_of("1(x0)").pos == 3);
    CHECK(error_of("1(2)").reason == "expected '(x' before a repeat");
    CHECK(error_of("1(x)").reason == "expected a repeat, found ')'");
    CHECK(error_of("1(x2").reason == "expected ')'");
    CHECK(error_of("1(x2").pos == 4);
    CHECK(error_of("1(x-2)").pos == 3);
    CHECK(error_of("(x2)").pos == 0);
    CHECK(error_of("1(x2)x").reason == "unexpected 'x'");
    CHECK(error_of("1(x2)(x2)").pos == 5);
    CHECK(error_of("1 (x2)").pos == 1);
}

TEST_CASE("parse_tasks_per_node caps the node count before allocating", "[slurm]") {
    CHECK(error_of("1(x999999999)").reason == "more than 65536 nodes");
    CHECK(error_of("1(x65536),1").pos == 10);
    CHECK(parse_tasks_per_node("1(x65536)").size() == 65536);
    CHECK(error_of("2,1,1", 2).reason == "more than 2 nodes");
}

TEST_CASE("parse_tasks_per_node caps the total number of tasks at INT_MAX", "[slurm]") {
    CHECK(error_of("65536(x65536)").reason == "more than 2147483647 tasks in all");
    CHECK(parse_tasks_per_node("65536(x32767)").size() == 32767);
}
