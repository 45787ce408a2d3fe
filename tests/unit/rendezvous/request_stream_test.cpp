#include "request_stream.hpp"

#include <catch2/catch.hpp>

#include "raw_connection.hpp"

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
                             bytes({0x03}) + field("/cnt") + i64(5) +      // ADD
                             bytes({0x06});                                // GETNUMKEYS
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

TEST_CASE("a counted request arriving in pieces is checked from where the last piece ended",
          "[rdzv][stream]") {
    // MULTI_SET of 1,000 pairs: each parse of the growing buffer goes on from the items already
    // checked (it walked them all again, O(pieces x size): 55 MB in 64 KiB pieces took seconds).
    std::string wire = validate() + bytes({0x0B}) + u64(1000);
    Request expected{Op::MultiSet, {}, {}, 0, 0};
    for (int i = 0; i < 1000; ++i) {
        expected.keys.push_back("k" + std::to_string(i));
        expected.values.push_back(std::string(static_cast<std::size_t>(i % 7), 'v'));
        wire += field(expected.keys.back()) + field(expected.values.back());
    }
    const std::string_view body = std::string_view(wire).substr(5);
    ScanProgress progress;
    const auto half =
        parse_request(body.substr(0, body.size() / 2), Dialect::Modern, kLimits, &progress);
    REQUIRE(half.status == ParseResult::Status::NeedMore);
    CHECK(progress.items > 400);
    CHECK(progress.items < 600);
    CHECK(progress.end <= body.size() / 2);
    const auto whole = parse_request(body, Dialect::Modern, kLimits, &progress);
    REQUIRE(whole.status == ParseResult::Status::Complete);
    CHECK(whole.request == expected);
    CHECK(whole.size == body.size());

    RequestStream stream(kLimits);  // and through the stream, in 97-byte pieces
    std::vector<Request> got;
    for (std::size_t pos = 0; pos < wire.size(); pos += 97) {
        stream.feed(std::string_view(wire).substr(pos, 97));
        for (auto& r : drain(stream)) got.push_back(std::move(r));
    }
    REQUIRE(got.size() == 1);
    CHECK(got[0] == expected);
    CHECK(stream.buffered() == 0);
}

TEST_CASE("RequestStream grows at once to a pending value's size and frees it when drained",
          "[rdzv][stream]") {
    RequestStream stream(kLimits);
    const std::string value(1 << 20, 'x');
    const std::string wire = validate() + bytes({0x01}) + field("k") + field(value) + bytes({0x07});
    stream.feed(std::string_view(wire).substr(0, 4096));  // the value's length is known now
    CHECK_FALSE(stream.next());
    CHECK(stream.growth_for(4096) == wire.size() - 1 - 5 - stream.capacity());
    CHECK(stream.room() < 4096);
    stream.feed(std::string_view(wire).substr(4096, wire.size() - 1 - 4096));
    const auto capacity = stream.capacity();
    CHECK(capacity == wire.size() - 1 - 5);  // exactly the SET: no doubling, no copies as it came
    auto set = stream.next();
    REQUIRE(set);
    CHECK(set->values[0] == value);
    CHECK(stream.capacity() == 0);  // drained: the megabyte is given back
    stream.feed(std::string_view(wire).substr(wire.size() - 1));
    auto num_keys = stream.next();
    REQUIRE(num_keys);
    CHECK(num_keys->op == Op::NumKeys);
}
