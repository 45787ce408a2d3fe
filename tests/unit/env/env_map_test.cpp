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

TEST_CASE("parse_bool takes torchrun's spellings and nothing else", "[env]") {
    for (const char* yes : {"1", "true", "True", "yes"}) CHECK(parse_bool(yes) == true);
    for (const char* no : {"0", "false", "False", "no"}) CHECK(parse_bool(no) == false);
    for (const char* other : {"", "TRUE", "on", "2", " 1"}) CHECK_FALSE(parse_bool(other));
}

TEST_CASE("parse_seconds takes whole non-negative numbers up to 1e7", "[env]") {
    CHECK(parse_seconds("0") == 0.0);
    CHECK(parse_seconds("2.5") == 2.5);
    CHECK(parse_seconds("1e7") == 1e7);
    for (const char* bad : {"", "-1", "1e8", "nan", "inf", "5s", "1,5"})
        CHECK_FALSE(parse_seconds(bad));
}
