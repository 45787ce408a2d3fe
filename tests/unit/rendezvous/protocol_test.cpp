#include "protocol.hpp"

#include <catch2/catch.hpp>

#include "raw_connection.hpp"
#include "request_parser.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::detail;
using ptrun::rdzv::test::bytes;
using ptrun::rdzv::test::field;
using ptrun::rdzv::test::i64;
using ptrun::rdzv::test::u64;

namespace {

Request req(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
            std::int64_t number = 0, std::uint32_t word = 0) {
    return Request{op, std::move(keys), std::move(values), number, word};
}

/// One request of every op the dialect has, with awkward contents (empty and binary bytes).
std::vector<Request> samples(Dialect d) {
    std::vector<Request> all = {
        req(Op::Set, {"/k1"}, {"v1"}),
        req(Op::Set, {""}, {""}),
        req(Op::CompareSet, {"k"}, {"", std::string("\0\xff", 2)}),
        req(Op::Get, {"/k1"}),
        req(Op::Add, {"cnt"}, {}, -2),
        req(Op::Check, {}),
        req(Op::Check, {"a", "b", "a"}),
        req(Op::Wait, {"x"}),
        req(Op::NumKeys),
        req(Op::DeleteKey, {"k"}),
        req(Op::Append, {"k"}, {"tail"}),
        req(Op::MultiGet, {"a", "b"}),
        req(Op::MultiSet, {"a", "b"}, {"1", "2"}),
        req(Op::CancelWait),
    };
    if (d == Dialect::Legacy) {
        all.push_back(req(Op::WatchKey, {"w"}));
    } else {
        all.push_back(req(Op::Validate, {}, {}, 0, kValidationMagic));
        all.push_back(req(Op::Ping, {}, {}, 0, 4242));
        all.push_back(req(Op::QueuePush, {"q"}, {"item"}));
        all.push_back(req(Op::QueuePop, {"q"}));
        all.push_back(req(Op::QueueLen, {"q"}));
        all.push_back(req(Op::ListKeys));
        all.push_back(req(Op::Barrier, {"b"}, {}, 8));
    }
    return all;
}

const TcpStoreLimits kLimits{};

}  // namespace

TEST_CASE("encode_request reproduces the captured PyTorch 1.13 bytes", "[rdzv][codec]") {
    const auto L = Dialect::Legacy;
    CHECK(encode_request(L, req(Op::Set, {"/k1"}, {"v1"})) ==
          bytes({0x00}) + u64(3) + "/k1" + u64(2) + "v1");
    CHECK(encode_request(L, req(Op::Wait, {"/k1"})) == bytes({0x05}) + u64(1) + u64(3) + "/k1");
    CHECK(encode_request(L, req(Op::Get, {"/k1"})) == bytes({0x02}) + u64(3) + "/k1");
    CHECK(encode_request(L, req(Op::Add, {"/cnt"}, {}, 5)) ==
          bytes({0x03, 4, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0x63, 0x6E, 0x74, 5, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(encode_request(L, req(Op::Add, {"/cnt"}, {}, -2)).substr(13) ==
          bytes({0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
    CHECK(encode_request(L, req(Op::CompareSet, {"/k1"}, {"v1", "v2"})) ==
          bytes({0x01}) + field("/k1") + field("v1") + field("v2"));
    CHECK(encode_request(L, req(Op::NumKeys)) == bytes({0x06}));
    CHECK(encode_request(L, req(Op::DeleteKey, {"/k1"})) == bytes({0x08}) + field("/k1"));
    CHECK(encode_request(L, req(Op::Add, {"init/"}, {}, 1)) ==
          bytes({0x03}) + u64(5) + "init/" + i64(1));
}

TEST_CASE("encode_request writes the modern connection start", "[rdzv][codec]") {
    CHECK(encode_request(Dialect::Modern, req(Op::Validate, {}, {}, 0, kValidationMagic)) ==
          bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}));
    CHECK(encode_request(Dialect::Modern, req(Op::Ping, {}, {}, 0, 0x01020304)) ==
          bytes({0x0D, 0x04, 0x03, 0x02, 0x01}));
    CHECK(encode_request(Dialect::Modern, req(Op::Add, {"init/"}, {}, 1)) ==
          bytes({0x04}) + u64(5) + "init/" + i64(1));
}

TEST_CASE("op numbering follows both dialect tables", "[rdzv][codec]") {
    CHECK(decode_op(Dialect::Legacy, 7) == Op::WatchKey);
    CHECK(decode_op(Dialect::Legacy, 8) == Op::DeleteKey);
    CHECK(decode_op(Dialect::Legacy, 12) == Op::CancelWait);
    CHECK_FALSE(decode_op(Dialect::Legacy, 13).has_value());
    CHECK(decode_op(Dialect::Modern, 0) == Op::Validate);
    CHECK(decode_op(Dialect::Modern, 8) == Op::DeleteKey);
    CHECK(decode_op(Dialect::Modern, 12) == Op::CancelWait);
    CHECK(decode_op(Dialect::Modern, 18) == Op::Barrier);
    CHECK_FALSE(decode_op(Dialect::Modern, 19).has_value());
    CHECK_FALSE(encode_op(Dialect::Modern, Op::WatchKey).has_value());
    CHECK_FALSE(encode_op(Dialect::Legacy, Op::Ping).has_value());
    CHECK_THROWS_AS(encode_request(Dialect::Legacy, req(Op::QueueLen, {"q"})), StoreError);
}

TEST_CASE("every request round-trips through encode and parse", "[rdzv][codec]") {
    for (Dialect d : {Dialect::Legacy, Dialect::Modern}) {
        for (const auto& r : samples(d)) {
            const std::string wire = encode_request(d, r);
            const auto parsed = parse_request(wire + "trailing", d, kLimits);
            INFO(op_name(r.op));
            REQUIRE(parsed.status == ParseResult::Status::Complete);
            CHECK(parsed.size == wire.size());
            CHECK(parsed.request == r);
        }
    }
}

TEST_CASE("parse_request asks for more on every proper prefix", "[rdzv][codec]") {
    for (Dialect d : {Dialect::Legacy, Dialect::Modern}) {
        for (const auto& r : samples(d)) {
            const std::string wire = encode_request(d, r);
            for (std::size_t n = 0; n < wire.size(); ++n) {
                const auto parsed = parse_request(std::string_view(wire).substr(0, n), d, kLimits);
                INFO(op_name(r.op) << " prefix " << n);
                REQUIRE(parsed.status == ParseResult::Status::NeedMore);
                CHECK(parsed.size > n);
                CHECK(parsed.size <= wire.size());
            }
        }
    }
}

TEST_CASE("parse_request rejects sizes over the limits before the bytes arrive", "[rdzv][codec]") {
    TcpStoreLimits limits;
    limits.max_key_bytes = 16;
    limits.max_value_bytes = 32;
    limits.max_keys_per_request = 4;
    limits.max_request_bytes = 1024;
    auto status = [&](const std::string& wire, Dialect d = Dialect::Legacy) {
        return parse_request(wire, d, limits).status;
    };
    const auto invalid = ParseResult::Status::Invalid;
    CHECK(status(bytes({0x02}) + u64(17)) == invalid);                     // GET, long key
    CHECK(status(bytes({0x00}) + field("k") + u64(33)) == invalid);        // SET, big value
    CHECK(status(bytes({0x04}) + u64(5)) == invalid);                      // CHECK, 5 keys
    CHECK(status(bytes({0x00}) + u64(0xCEF7853C00000000ull)) == invalid);  // nmap-like SET
    CHECK(status(bytes({0x0B}) + u64(4) + field("k") + u64(32) + std::string(32, 'v') + field("k") +
                 u64(32)) == ParseResult::Status::NeedMore);
    limits.max_request_bytes = 64;
    CHECK(status(bytes({0x0B}) + u64(4) + field("k") + u64(32) + std::string(32, 'v') + field("k") +
                 u64(32)) == invalid);
    const auto unknown = parse_request(bytes({0x63}), Dialect::Legacy, limits);
    CHECK(unknown.status == invalid);
    CHECK_THAT(unknown.error, Catch::Contains("unknown query type 99"));
    CHECK(status(bytes({19}), Dialect::Modern) == invalid);
}

TEST_CASE("detect_dialect follows spec 3.3", "[rdzv][codec]") {
    CHECK(detect_dialect("") == Detection::NeedMore);
    CHECK(detect_dialect(bytes({0x00})) == Detection::NeedMore);
    CHECK(detect_dialect(bytes({0x00, 0xCE, 0xF7})) == Detection::NeedMore);
    CHECK(detect_dialect(bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C})) == Detection::Modern);
    CHECK(detect_dialect(bytes({0x00, 0x03})) == Detection::Legacy);  // 1.13 SET, key length 3
    CHECK(detect_dialect(bytes({0x03})) == Detection::Legacy);
    CHECK(detect_dialect(bytes({0xCE, 0xF7})) == Detection::Reject);
}
