#include "ptrun/launcher/output/output_filters.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

using Filters = std::vector<std::string>;

Filters parsed(std::string_view value) {
    return parse_output_filters("duplicate-stdout-filters", value);
}

}  // namespace

TEST_CASE("output filters split at commas, ',,' standing for a comma", "[launcher][filters]") {
    // The same values through torchrun's comma_separated_list give the same lists.
    CHECK(parsed("apple,orange") == Filters{"apple", "orange"});
    CHECK(parsed("loss") == Filters{"loss"});
    CHECK(parsed("a,,b") == Filters{"a,b"});
    CHECK(parsed("a,,,b") == Filters{"a,", "b"});
    CHECK(parsed("a,,,,b") == Filters{"a,,b"});
    CHECK(parsed(",,a") == Filters{",a"});
    CHECK(parsed("a,,") == Filters{"a,"});
    CHECK(parsed(",,") == Filters{","});
    CHECK(parsed(" step ,ERROR") == Filters{" step ", "ERROR"});
    CHECK(parsed("").empty());
}

TEST_CASE("an empty output filter is refused instead of copying every line",
          "[launcher][filters]") {
    CHECK_THROWS_WITH(parsed("a,"),
                      "--duplicate-stdout-filters 'a,': filter 2 is empty and "
                      "would copy every line (write ',,' for a comma in a filter)");
    CHECK_THROWS_WITH(parsed(",a"), Catch::Contains("filter 1 is empty"));
    CHECK_THROWS_WITH(parsed(","), Catch::Contains("filter 1 is empty"));
    CHECK_THROWS_WITH(parsed("a,,,"), Catch::Contains("filter 2 is empty"));
    CHECK_THROWS_AS(parse_output_filters("duplicate-stderr-filters", "x,"), UsageError);
}

TEST_CASE("a line is copied when it contains any filter", "[launcher][filters]") {
    Filters f{"loss=", "a,b"};
    CHECK(matches_any_filter("step 10 loss=0.25", f));
    CHECK(matches_any_filter("got a,b here", f));
    CHECK_FALSE(matches_any_filter("step 10 lr=3e-4", f));
    CHECK_FALSE(matches_any_filter("a, b", f));
    CHECK_FALSE(matches_any_filter("anything", {}));
    CHECK(matches_any_filter(std::string_view("bin\0loss=1", 10), f));
}

TEST_CASE("filtered lines: only matching complete lines, prefixed, bounded in memory",
          "[launcher][filters]") {
    FilteredLines lines({"loss", "NCCL"}, "[h:3] ", 16);
    std::string out;
    lines.feed("step 1 loss 0.5\nnothing\nNC", 26, out);
    CHECK(out == "[h:3] step 1 loss 0.5\n");
    out.clear();
    lines.feed("CL WARN x\n", 10, out);  // a match split across reads
    CHECK(out == "[h:3] NCCL WARN x\n");
    out.clear();
    // A line of 40 bytes is tested in pieces of 16: only the piece holding "loss" is copied.
    lines.feed("aaaaaaaaaaaaaaaaaaaaaaaaloss bbbbbbbbbbb\n", 41, out);
    CHECK(out == "[h:3] aaaaaaaaloss bbb\n");
    out.clear();
    lines.feed("tail loss", 9, out);
    CHECK(out.empty());
    lines.finish(out);  // the worker ended without a newline
    CHECK(out == "[h:3] tail loss\n");
    out.clear();
    lines.finish(out);
    CHECK(out.empty());
}
