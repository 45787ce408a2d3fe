#include "store_state.hpp"

#include <catch2/catch.hpp>

#include "raw_connection.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::detail;
using ptrun::rdzv::test::bytes;
using ptrun::rdzv::test::field;
using ptrun::rdzv::test::i64;

namespace {

Request req(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
            std::int64_t number = 0) {
    return Request{op, std::move(keys), std::move(values), number, 0};
}

/// Drives a StoreState and records what each connection would receive.
struct Harness {
    StoreState state;
    std::vector<Outgoing> out;

    std::vector<Outgoing> run(ConnId from, const Request& r) {
        out.clear();
        state.handle(from, Request(r), out);
        return out;
    }
    /// Replies to `from` only, concatenated.
    std::string reply(ConnId from, const Request& r) {
        std::string s;
        for (auto& o : run(from, r)) {
            if (o.to == from) s += o.flatten();
        }
        return s;
    }
};

const std::string kStop = bytes({0x00});
const std::string kCanceled = bytes({0x01});

}  // namespace

TEST_CASE("compare_set follows the spec table", "[rdzv][state]") {
    Harness h;
    CHECK(h.reply(1, req(Op::CompareSet, {"k"}, {"x", "v"})) == field("x"));  // absent, lie
    CHECK(h.reply(1, req(Op::Check, {"k"})) == bytes({0x01}));
    CHECK(h.reply(1, req(Op::CompareSet, {"k"}, {"", "v"})) == field("v"));   // created
    CHECK(h.reply(1, req(Op::CompareSet, {"k"}, {"v", "w"})) == field("w"));  // swapped
    CHECK(h.reply(1, req(Op::CompareSet, {"k"}, {"v", "z"})) == field("w"));  // mismatch
    CHECK(h.reply(1, req(Op::Get, {"k"})) == field("w"));
}

TEST_CASE("add keeps counters as decimal text and rejects other values", "[rdzv][state]") {
    Harness h;
    CHECK(h.reply(1, req(Op::Add, {"c"}, {}, 5)) == i64(5));
    CHECK(h.reply(1, req(Op::Add, {"c"}, {}, -2)) == i64(3));
    CHECK(h.reply(1, req(Op::Get, {"c"})) == field("3"));
    CHECK(h.reply(1, req(Op::Add, {"z"}, {}, 0)) == i64(0));
    h.run(1, req(Op::Set, {"s"}, {"abc"}));
    CHECK_THROWS_AS(h.run(1, req(Op::Add, {"s"}, {}, 1)), ProtocolError);
    CHECK(h.reply(1, req(Op::Get, {"s"})) == field("abc"));
    h.run(1, req(Op::Set, {"big"}, {"9223372036854775807"}));
    CHECK_THROWS_AS(h.run(1, req(Op::Add, {"big"}, {}, 1)), ProtocolError);
}

TEST_CASE("a wait is answered when its last missing key is created by any writer",
          "[rdzv][state]") {
    for (Op writer : {Op::Set, Op::Add, Op::Append, Op::MultiSet, Op::CompareSet}) {
        Harness h;
        INFO(op_name(writer));
        h.run(1, req(Op::Set, {"a"}, {"1"}));
        CHECK(h.run(2, req(Op::Wait, {"a", "b"})).empty());
        CHECK(h.state.waiting(2));
        Request w = req(writer, {"b"}, {"v"}, 1);
        if (writer == Op::CompareSet) w.values = {"", "v"};
        std::vector<std::string> to_waiter;
        for (auto& o : h.run(1, w)) {
            if (o.to == 2) to_waiter.push_back(o.flatten());
        }
        CHECK(to_waiter == std::vector<std::string>{kStop});
        CHECK_FALSE(h.state.waiting(2));
    }
}

TEST_CASE("wait replies at once when the keys exist and delete wakes nobody", "[rdzv][state]") {
    Harness h;
    CHECK(h.reply(1, req(Op::Wait, {})) == kStop);
    h.run(1, req(Op::Set, {"a"}, {"1"}));
    CHECK(h.reply(1, req(Op::Wait, {"a", "a"})) == kStop);
    CHECK(h.run(2, req(Op::Wait, {"gone"})).empty());
    CHECK(h.reply(1, req(Op::DeleteKey, {"gone"})) == i64(0));
    CHECK(h.reply(1, req(Op::DeleteKey, {"a"})) == i64(1));
    CHECK(h.state.waiting(2));
}

TEST_CASE("a new request drops a pending wait silently (1.13 stale wake)", "[rdzv][state]") {
    Harness h;
    CHECK(h.run(1, req(Op::Wait, {"absent"})).empty());
    // The 1.13 client timed out and now sets the key itself: no stale STOP_WAITING.
    const auto out = h.run(1, req(Op::Set, {"absent"}, {"v"}));
    CHECK(out.empty());
    CHECK_FALSE(h.state.waiting(1));
}

TEST_CASE("cancel_wait is always answered and wins over nothing", "[rdzv][state]") {
    Harness h;
    CHECK(h.reply(1, req(Op::CancelWait)) == kCanceled);
    CHECK(h.run(1, req(Op::Wait, {"k"})).empty());
    CHECK(h.reply(1, req(Op::CancelWait)) == kCanceled);
    CHECK(h.run(2, req(Op::Set, {"k"}, {"v"})).empty());  // nobody left to wake
}

TEST_CASE("queue push wakes one waiter and pop reports the length before", "[rdzv][state]") {
    Harness h;
    CHECK(h.run(1, req(Op::Wait, {"q"})).empty());
    CHECK(h.run(2, req(Op::Wait, {"q"})).empty());
    const auto out = h.run(3, req(Op::QueuePush, {"q"}, {"x"}));
    REQUIRE(out.size() == 1);
    CHECK(out[0].to == 1);
    CHECK(h.state.waiting(2));
    CHECK(h.reply(3, req(Op::Check, {"q"})) == bytes({0x00}));
    CHECK(h.reply(3, req(Op::QueueLen, {"q"})) == i64(1));
    CHECK(h.reply(1, req(Op::QueuePop, {"q"})) == i64(1) + field("x"));
    CHECK(h.reply(1, req(Op::QueuePop, {"q"})) == i64(0));
    CHECK(h.state.num_keys() == 0);  // queues are not keys
}

TEST_CASE("barrier answers everybody when the count reaches the world size", "[rdzv][state]") {
    Harness h;
    CHECK(h.run(1, req(Op::Barrier, {"b"}, {}, 3)).empty());
    CHECK(h.run(2, req(Op::Barrier, {"b"}, {}, 3)).empty());  // 2 of 3: nobody released
    const auto out = h.run(3, req(Op::Barrier, {"b"}, {}, 3));
    REQUIRE(out.size() == 3);
    CHECK(out[0].to == 1);
    CHECK(out[1].to == 2);
    CHECK(out[2].to == 3);
    CHECK(h.reply(1, req(Op::Get, {"b"})) == field("3"));
}

TEST_CASE("watch_key acknowledges and reports create, update and delete", "[rdzv][state]") {
    Harness h;
    CHECK(h.reply(9, req(Op::WatchKey, {"k"})) == bytes({0x03}));
    auto notes = [&](const Request& r) {
        std::string s;
        for (auto& o : h.run(1, r)) {
            if (o.to == 9) s += o.flatten();
        }
        return s;
    };
    CHECK(notes(req(Op::Set, {"k"}, {"a"})) == bytes({0x01}) + field("k") + field("") + field("a"));
    CHECK(notes(req(Op::Set, {"k"}, {"b"})) ==
          bytes({0x00}) + field("k") + field("a") + field("b"));
    CHECK(notes(req(Op::DeleteKey, {"k"})) == bytes({0x02}) + field("k") + field("b") + field(""));
    h.state.disconnect(9);
    CHECK(notes(req(Op::Set, {"k"}, {"c"})).empty());
}

TEST_CASE("clear wipes keys and queues, disconnect drops waits", "[rdzv][state]") {
    Harness h;
    h.run(1, req(Op::Set, {"a"}, {"1"}));
    h.run(1, req(Op::QueuePush, {"q"}, {"1"}));
    h.run(2, req(Op::Wait, {"z"}));
    h.state.clear();
    CHECK(h.reply(1, req(Op::NumKeys)) == i64(0));
    CHECK(h.reply(1, req(Op::QueueLen, {"q"})) == i64(0));
    CHECK(h.state.waiting(2));
    h.state.disconnect(2);
    CHECK_FALSE(h.state.waiting(2));
    CHECK(h.run(1, req(Op::Set, {"z"}, {"1"})).empty());
}
