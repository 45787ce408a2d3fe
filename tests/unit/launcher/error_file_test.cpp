#include "ptrun/launcher/output/error_file.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;

TEST_CASE("error file: torch's nested shape", "[launcher][report]") {
    auto r = parse_error_file(R"({"message": {"message": "ValueError: boom",
        "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1795332812"}}})");
    REQUIRE(r);
    CHECK(r->message == "ValueError: boom");
    CHECK(r->traceback == "Traceback ...");
    CHECK(r->timestamp == "1795332812");
}

TEST_CASE("error file: the flat shape with a top-level timestamp", "[launcher][report]") {
    auto r = parse_error_file(R"({"message": "RuntimeError: x", "timestamp": 17})");
    REQUIRE(r);
    CHECK(r->message == "RuntimeError: x");
    CHECK(r->timestamp == "17");
}

TEST_CASE("error file: anything else is not a report", "[launcher][report]") {
    CHECK_FALSE(parse_error_file("not json"));
    CHECK_FALSE(parse_error_file("[1,2]"));
    CHECK_FALSE(parse_error_file(R"({"other": 1})"));
    CHECK_FALSE(read_error_file("/nonexistent/error.json"));
}
