// Framing of the store's replies, as the relay reads them from the store it relays to.
#include "reply_parser.hpp"

#include <catch2/catch.hpp>

#include "protocol.hpp"

using namespace ptrun::rdzv::detail;

namespace {
std::string field(std::string_view v) {
    std::string out;
    put_bytes(out, v);
    return out;
}
std::string i64(std::int64_t v) {
    std::string out;
    put_i64(out, v);
    return out;
}

struct Case {
    Op op;
    std::size_t keys;
    std::string reply;
};

std::vector<Case> cases() {
    return {
        {Op::Get, 1, field("value")},
        {Op::CompareSet, 1, field("")},
        {Op::Add, 1, i64(42)},
        {Op::Check, 2, std::string(1, '\0')},
        {Op::Wait, 1, std::string(1, '\0')},
        {Op::Ping, 0, "abcd"},
        {Op::MultiGet, 3, field("a") + field("") + field(std::string(1000, 'x'))},
        {Op::QueuePop, 1, i64(0)},
        {Op::QueuePop, 1, i64(3) + field("front")},
        {Op::ListKeys, 0, i64(2) + field("/a") + field("/bb")},
        {Op::ListKeys, 0, i64(0)},
        {Op::NumKeys, 0, i64(7)},
    };
}
}  // namespace

TEST_CASE("reply_size frames each reply whole, and asks for more before", "[rdzv][relay]") {
    for (const auto& c : cases()) {
        INFO(op_name(c.op));
        const std::string trailing = c.reply + "NEXT";
        CHECK(reply_size(trailing, c.op, c.keys, 1 << 20) == c.reply.size());
        for (std::size_t cut = 0; cut < c.reply.size(); ++cut) {
            CHECK_FALSE(
                reply_size(std::string_view(c.reply).substr(0, cut), c.op, c.keys, 1 << 20));
        }
    }
    CHECK_FALSE(has_reply(Op::Set));
    CHECK(has_reply(Op::Get));
}

TEST_CASE("reply_size refuses a reply over the limit before it has arrived", "[rdzv][relay]") {
    std::string huge;
    put_u64(huge, std::uint64_t{1} << 40);
    CHECK_THROWS_AS(reply_size(huge, Op::Get, 1, 1 << 20), ProtocolError);
    CHECK_THROWS_AS(reply_size(i64(-1), Op::ListKeys, 0, 1 << 20), ProtocolError);
    CHECK_THROWS_AS(reply_size("", Op::Set, 1, 1 << 20), ProtocolError);
}

TEST_CASE("ReplySkipper walks past a reply fed in pieces of any size", "[rdzv][relay]") {
    for (const auto& c : cases()) {
        for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
            INFO(op_name(c.op) << " in pieces of " << piece);
            const std::string bytes = c.reply + "NEXT";
            ReplySkipper skipper(c.op, c.keys);
            std::size_t at = 0;
            while (!skipper.done() && at < bytes.size()) {
                const auto chunk = std::string_view(bytes).substr(at, piece);
                at += skipper.consume(chunk);
            }
            CHECK(skipper.done());
            CHECK(at == c.reply.size());
        }
    }
}
