#include <catch2/catch.hpp>

#include "raw_connection.hpp"
#include "request_stream.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::detail;
using ptrun::rdzv::test::bytes;
using ptrun::rdzv::test::field;
using ptrun::rdzv::test::i64;
using ptrun::rdzv::test::u64;
using ptrun::rdzv::test::validate;

namespace {
const TcpStoreLimits kLimits{};

std::vector<Request> drain(RequestStream& s) {
    std::vector<Request> out;
    while (auto r = s.next()) out.push_back(std::move(*r));
    return out;
}
}  // namespace

TEST_CASE("RequestStream yields legacy requests in order when fed one byte at a time",
          "[rdzv][stream]") {
    const std::string wire = bytes({0x00}) + field("/k1") + field("v1") +  // SET
                             bytes({0x03}) + field("/cnt") + i64(5) +     // ADD
                             bytes({0x06});                               // GETNUMKEYS
    RequestStream stream(kLimits);
    std::vector<Request> got;
    for (char c : wire) {
        stream.feed(std::string_view(&c, 1));
        for (auto& r : drain(stream)) got.push_back(std::move(r));
    }
    REQUIRE(got.size() == 3);
    CHECK(stream.dialect() == Dialect::Legacy);
    CHECK(got[0].op == Op::Set);
    CHECK(got[0].keys[0] == "/k1");
    CHECK(got[1].op == Op::Add);
    CHECK(got[1].number == 5);
    CHECK(got[2].op == Op::NumKeys);
    CHECK(stream.buffered() == 0);
}

TEST_CASE("RequestStream swallows the modern VALIDATE and parses modern numbering",
          "[rdzv][stream]") {
    RequestStream stream(kLimits);
    stream.feed(validate() + bytes({0x0D}) + ptrun::rdzv::test::u32(77) + bytes({0x07}));
    const auto got = drain(stream);
    REQUIRE(got.size() == 2);
    CHECK(stream.dialect() == Dialect::Modern);
    CHECK(got[0].op == Op::Ping);
    CHECK(got[0].word == 77);
    CHECK(got[1].op == Op::NumKeys);
}

TEST_CASE("RequestStream rejects a second VALIDATE, a bad first byte and garbage",
          "[rdzv][stream]") {
    {
        RequestStream stream(kLimits);
        stream.feed(validate() + validate());
        CHECK_THROWS_AS(drain(stream), ProtocolError);
    }
    {
        RequestStream stream(kLimits);
        stream.feed(bytes({0xCE, 0xF7, 0x85, 0x3C, 0x03}));
        CHECK_THROWS_AS(drain(stream), ProtocolError);
    }
    {
        RequestStream stream(kLimits);
        stream.feed(bytes({0x42}));
        CHECK_THROWS_WITH(drain(stream), Catch::Contains("unknown query type 66"));
    }
}

TEST_CASE("RequestStream waits for a legacy SET that starts like VALIDATE", "[rdzv][stream]") {
    RequestStream stream(kLimits);
    stream.feed(bytes({0x00}));
    CHECK_FALSE(stream.next().has_value());
    CHECK_FALSE(stream.dialect().has_value());
    stream.feed(u64(1) + "k" + field("v"));
    const auto got = drain(stream);
    REQUIRE(got.size() == 1);
    CHECK(stream.dialect() == Dialect::Legacy);
    CHECK(got[0].values[0] == "v");
}
