#include "ptrun/launcher/cli/std_streams.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

TEST_CASE("std spec: one value for every rank", "[launcher][logs]") {
    auto spec = parse_std_spec("3", "--tee");
    CHECK(spec.for_rank(0) == StdMask::All);
    CHECK(spec.for_rank(7) == StdMask::All);
    CHECK_FALSE(spec.none());
    CHECK(parse_std_spec("0", "--tee").none());
}

TEST_CASE("std spec: per-rank mapping leaves other ranks alone", "[launcher][logs]") {
    auto spec = parse_std_spec("0:1,2:2", "--redirects");
    CHECK(spec.for_rank(0) == StdMask::Out);
    CHECK(spec.for_rank(1) == StdMask::None);
    CHECK(spec.for_rank(2) == StdMask::Err);
    CHECK(has(StdMask::All, StdMask::Err));
    CHECK_FALSE(has(StdMask::Out, StdMask::Err));
}

TEST_CASE("std spec: torchrun's 9:0 workaround is accepted", "[launcher][logs]") {
    CHECK(parse_std_spec("9:0", "--tee").none());
}

TEST_CASE("std spec: bad values name the flag", "[launcher][logs]") {
    CHECK_THROWS_WITH(parse_std_spec("4", "--tee"), Catch::Contains("--tee '4'"));
    CHECK_THROWS_WITH(parse_std_spec("0:1,x", "--redirects"),
                      Catch::Contains("--redirects '0:1,x'"));
    CHECK_THROWS_AS(parse_std_spec("", "--tee"), UsageError);
    CHECK_THROWS_AS(parse_std_spec("a:1", "--tee"), UsageError);
}
