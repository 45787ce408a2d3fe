#include "ptrun/env/env_map.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::env;

TEST_CASE("parse_int accepts whole decimal integers only", "[env]") {
    CHECK(parse_int("42") == 42);
    CHECK(parse_int("+7") == 7);
    CHECK(parse_int("-3") == -3);
    CHECK_FALSE(parse_int(""));
    CHECK_FALSE(parse_int("4x"));
    CHECK_FALSE(parse_int(" 4"));
    CHECK_FALSE(parse_int("99999999999999999999"));
}

TEST_CASE("lookup_int names the variable and the value when out of range", "[env]") {
    EnvMap env{{"N", "0"}, {"M", "abc"}};
    CHECK_FALSE(lookup_int(env, "UNSET", 1, 10));
    CHECK_THROWS_WITH(lookup_int(env, "N", 1, 10),
                      Catch::Contains("N='0'") && Catch::Contains("1 to 10"));
    CHECK_THROWS_AS(lookup_int(env, "M", 0, 10), ParseError);
}

TEST_CASE("from_environ splits at the first equals sign", "[env]") {
    const char* block[] = {"A=1", "B=x=y", "junk", "E=", nullptr};
    auto env = from_environ(block);
    CHECK(env.size() == 3);
    CHECK(env["B"] == "x=y");
    CHECK(env["E"].empty());
}
