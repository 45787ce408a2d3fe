#include "ptrun/watchdog/timer_request.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "flat_json.hpp"

using namespace ptrun::watchdog;

TEST_CASE("torch's acquire and release lines parse", "[watchdog][timer]") {
    // As torch 1.13 and 2.6 write them (json.dumps of FileTimerRequest).
    auto acquire = parse_timer_request(R"({"version": 1, "pid": 4242, "scope_id": "train.py#12", )"
                                       R"("expiration_time": 1700000123.25, "signal": 9})");
    CHECK(acquire == TimerRequest{4242, "train.py#12", 1700000123.25, 9});
    CHECK_FALSE(acquire.is_release());
    auto release = parse_timer_request(
        R"({"version": 1, "pid": 4242, "scope_id": "train.py#12", "expiration_time": -1, )"
        R"("signal": 0})");
    CHECK(release.is_release());
    CHECK(release.signal == 0);
}

TEST_CASE("Python's json extensions and escapes are understood", "[watchdog][timer]") {
    auto never = parse_timer_request(
        R"({"pid": 7, "scope_id": "s", "expiration_time": Infinity, "signal": 15})");
    CHECK(std::isinf(never.expiration_time));
    auto released =
        parse_timer_request(R"({"pid": 7, "scope_id": "s", "expiration_time": -Infinity})");
    CHECK(released.is_release());
    CHECK(released.signal == 0);  // absent: no signal
    // ensure_ascii escapes, a surrogate pair, a lone surrogate, the short escapes.
    auto r = parse_timer_request(
        R"({"pid": 7, "scope_id": "\u00e9t\u00e9 \ud83d\ude00 \udc00 \"q\" \\ \/ \t", )"
        R"("expiration_time": 1e9})");
    CHECK(r.scope_id == "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd \"q\" \\ / \t");
    CHECK(r.expiration_time == 1e9);
    // Negative signals mean none, unknown (flat) keys are ignored, a repeated key keeps its last
    // value.
    auto odd = parse_timer_request(
        R"( {"pid": 1, "pid": 8, "scope_id": "x", "expiration_time": 0, "signal": -9, )"
        R"("extra": "x"} )");
    CHECK(odd.pid == 8);
    CHECK(odd.signal == 0);
}

TEST_CASE("malformed timer requests are refused with the reason", "[watchdog][timer]") {
    struct Row {
        std::string line;
        const char* reason;
    };
    const Row rows[] = {
        {"", "expected '{'"},
        {"[1,2]", "expected '{'"},
        {R"({"pid": 1, "scope_id": "s", "expiration_time": 1)", "',' or '}'"},
        {R"({"pid": 1, "scope_id": "s", "expiration_time": 1} x)", "the end of the input"},
        {R"({"pid": {"a": 1}, "scope_id": "s", "expiration_time": 1})", "no nesting"},
        {R"({"scope_id": "s", "expiration_time": 1})", "no 'pid'"},
        {R"({"pid": 0, "scope_id": "s", "expiration_time": 1})", "'pid' must be an integer"},
        {R"({"pid": -5, "scope_id": "s", "expiration_time": 1})", "'pid' must be an integer"},
        {R"({"pid": 2.5, "scope_id": "s", "expiration_time": 1})", "'pid' must be an integer"},
        {R"({"pid": 99999999999, "scope_id": "s", "expiration_time": 1})", "'pid' must be"},
        {R"({"pid": "7", "scope_id": "s", "expiration_time": 1})", "'pid' is not a number"},
        {R"({"pid": 7, "expiration_time": 1})", "no 'scope_id'"},
        {R"({"pid": 7, "scope_id": 3, "expiration_time": 1})", "'scope_id' is not a string"},
        {R"({"pid": 7, "scope_id": "s"})", "no 'expiration_time'"},
        {R"({"pid": 7, "scope_id": "s", "expiration_time": NaN})", "NaN"},
        {R"({"pid": 7, "scope_id": "s", "expiration_time": "soon"})", "not a number"},
        {R"({"pid": 7, "scope_id": "s", "expiration_time": 1, "signal": 99})", "'signal' must"},
        {R"({"version": 2, "pid": 7, "scope_id": "s", "expiration_time": 1})", "version 2"},
        {"{\"pid\": 7, \"scope_id\": \"a\x01\", \"expiration_time\": 1}", "control character"},
        {R"({"pid": 7, "scope_id": "\x", "expiration_time": 1})", "an escape"},
        {R"({"pid": 7, "scope_id": "\u12", "expiration_time": 1})", "four hex digits"},
        {R"({"pid": 7, "scope_id": "open, "expiration_time": 1})", "expected"},
        {R"({"pid": 01, "scope_id": "s", "expiration_time": 1})", "expected"},
        {R"({"pid": 7, "scope_id": "s", "expiration_time": 1.})", "a digit after '.'"},
        {R"({"pid": 7, "scope_id": "s", "expiration_time": 1e})", "a digit in the exponent"},
    };
    for (const auto& row : rows) {
        INFO(row.line);
        CHECK_THROWS_WITH(parse_timer_request(row.line), Catch::Contains(row.reason));
    }
}

TEST_CASE("a request longer than PIPE_BUF is refused before parsing", "[watchdog][timer]") {
    const std::string scope(kMaxTimerRequestBytes, 'x');
    const std::string line = R"({"pid": 7, "scope_id": ")" + scope + R"(", "expiration_time": 1})";
    CHECK_THROWS_WITH(parse_timer_request(line), Catch::Contains("at most 4096"));
}

TEST_CASE("format_timer_request writes what parse_timer_request reads", "[watchdog][timer]") {
    for (const TimerRequest& r :
         {TimerRequest{1, "a \"quoted\"\nscope\x01", 123.5, 9}, TimerRequest{2, "x", -1, 0},
          TimerRequest{3, "inf", std::numeric_limits<double>::infinity(), 15}}) {
        CHECK(parse_timer_request(format_timer_request(r)) == r);
    }
}

TEST_CASE("the flat JSON parser keeps integers apart from other numbers", "[watchdog][timer]") {
    using namespace ptrun::watchdog::detail;
    auto o = parse_flat_object(R"({"a": -12, "b": 1.5, "c": 2e3, "d": true, "e": null, "f": "s"})");
    CHECK(std::get<JsonNumber>(o["a"]).is_integer);
    CHECK(std::get<JsonNumber>(o["a"]).integer == -12);
    CHECK_FALSE(std::get<JsonNumber>(o["b"]).is_integer);
    CHECK_FALSE(std::get<JsonNumber>(o["c"]).is_integer);
    CHECK(std::get<JsonNumber>(o["c"]).value == 2000);
    CHECK(std::get<bool>(o["d"]));
    CHECK(std::holds_alternative<JsonNull>(o["e"]));
    CHECK(std::get<std::string>(o["f"]) == "s");
    CHECK(parse_flat_object(" { } ").empty());
    CHECK_THROWS_AS(parse_flat_object("{\"a\": 1,}"), JsonError);
}
