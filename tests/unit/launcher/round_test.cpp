#include "ptrun/launcher/membership/round.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/membership/node_report_inbox.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"

using namespace ptrun::launcher;

namespace {

NodeInfo node(std::string id, std::string host, int node_rank = -1, bool store_host = false,
              int nproc = 2) {
    NodeInfo n;
    n.id = std::move(id);
    n.hostname = std::move(host);
    n.addr = "10.0.0.1";
    n.nproc = nproc;
    n.node_rank = node_rank;
    n.is_store_host = store_host;
    return n;
}

std::vector<std::string> ids(const std::vector<NodeInfo>& nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.id);
    return out;
}

}  // namespace

TEST_CASE("round: records survive the trip through the store", "[launcher][round]") {
    for (const auto& n : {node("a", "n1", -1, true), node("b", "n2", 1)})
        CHECK(decode_node(encode(n)) == n);
    RoundEnd e{EndReason::NodeLost, true, 7, "n2", 5, "gone"};
    CHECK(decode_end(encode(e)) == e);
    RoundEnd preempted{EndReason::Checkpoint, true, 138, "n1", -1, "checkpointed"};
    CHECK(decode_end(encode(preempted)) == preempted);
    for (bool checkpointed : {false, true}) {
        auto left = decode_event(encode(RdzvEvent{LeavingEvent{2, "a", "why", checkpointed, 138}}));
        REQUIRE(std::holds_alternative<LeavingEvent>(left));
        CHECK(std::get<LeavingEvent>(left).checkpointed == checkpointed);
        CHECK(std::get<LeavingEvent>(left).exit_code == (checkpointed ? 138 : 0));
    }
    // An older agent's departure has no "checkpointed": an ordinary leave.
    CHECK_FALSE(
        std::get<LeavingEvent>(decode_event(R"({"type":"leaving","round":1,"id":"a","why":"x"})"))
            .checkpointed);
    auto ev = decode_event(encode(RdzvEvent{JoinEvent{node("x", "h"), 4}}));
    REQUIRE(std::holds_alternative<JoinEvent>(ev));
    CHECK(std::get<JoinEvent>(ev).seq == 4);
    CHECK(std::get<JoinEvent>(ev).node == node("x", "h"));
    for (auto kind : {ReportKind::Timeline, ReportKind::Status}) {
        auto report =
            decode_event(encode(RdzvEvent{NodeReport{kind, 3, "n1", "{\"node\":\"a\"}"}}));
        REQUIRE(std::holds_alternative<NodeReport>(report));
        CHECK(std::get<NodeReport>(report).kind == kind);
        CHECK(std::get<NodeReport>(report).round == 3);
        CHECK(std::get<NodeReport>(report).id == "n1");
        CHECK(std::get<NodeReport>(report).text == "{\"node\":\"a\"}");
    }
    CHECK_THROWS_WITH(decode_event(encode(RdzvEvent{NodeReport{
                          ReportKind::Status, 3, "n1", std::string(kMaxNodeReport + 1, 'x')}})),
                      Catch::Contains("status report over"));
}

TEST_CASE("round: the store host's report inbox keeps each node's latest, bounded",
          "[launcher][round]") {
    NodeReportInbox inbox(2, 10);
    int changes = 0;
    inbox.on_change([&changes] { ++changes; });
    inbox.put("a", 1, "aaaa");
    inbox.put("a", 2, "aaaaa");   // replaces: 5 bytes kept
    inbox.put("b", 2, "bbbbb");   // 10 bytes: at the bound
    inbox.put("c", 2, "c");       // a third node: dropped
    inbox.put("b", 3, "bbbbbb");  // would make 11 bytes: dropped, "bbbbb" stays
    inbox.put("a", 3, "aaaa");    // 9 bytes
    auto seen = inbox.snapshot();
    REQUIRE(seen.size() == 2);
    CHECK(seen["a"].text == "aaaa");
    CHECK(seen["a"].round == 3);
    CHECK(seen["b"].text == "bbbbb");
    CHECK(seen["b"].round == 2);
    CHECK(changes == 4);
    inbox.on_change(nullptr);
    inbox.put("a", 4, "a");
    CHECK(changes == 4);
}

TEST_CASE("round: malformed records from the network are errors, not crashes",
          "[launcher][round]") {
    for (const char* bad :
         {"", "[]", "{}", "{\"round\":\"x\"}", "not json", "{\"type\":\"join\"}",
          "{\"type\":\"nope\"}", "{\"type\":\"failed\",\"round\":1,\"id\":\"a\",\"end\":{}}"}) {
        CHECK_THROWS_AS(decode_node(bad), std::runtime_error);
        CHECK_THROWS_AS(decode_event(bad), std::runtime_error);
        CHECK_THROWS_AS(decode_end(bad), std::runtime_error);
    }
    auto n = node("a", "h");
    n.nproc = 0;
    CHECK_THROWS_WITH(decode_node(encode(n)), Catch::Contains("nproc"));
}

TEST_CASE("round: group ranks are explicit node ranks, then store host, then hostname",
          "[launcher][round]") {
    std::vector<NodeInfo> nodes{node("c", "node3"), node("b", "node2", 0),
                                node("a", "node9", -1, true), node("d", "node1")};
    REQUIRE(order_members(nodes).empty());
    CHECK(ids(nodes) == std::vector<std::string>{"b", "a", "d", "c"});

    RoundAssignment r;
    r.members = {node("a", "h", -1, false, 2), node("b", "h", -1, false, 3),
                 node("c", "h", -1, false, 1)};
    CHECK(r.rank_base(0) == 0);
    CHECK(r.rank_base(2) == 5);
    CHECK(r.world_size() == 6);
    CHECK(r.group_rank_of("b") == 1);
    CHECK(r.group_rank_of("zz") == -1);

    std::vector<NodeInfo> twice{node("a", "n1", 1), node("b", "n2", 1)};
    CHECK_THAT(order_members(twice), Catch::Contains("both n1 and n2"));
    std::vector<NodeInfo> too_big{node("a", "n1", 2), node("b", "n2")};
    CHECK_THAT(order_members(too_big), Catch::Contains("--node-rank 2"));
}

TEST_CASE("round: numbers that are no integer of the field's type are refused",
          "[launcher][round]") {
    CHECK_THROWS_WITH(decode_event(R"({"type":"succeeded","round":1e30,"id":"a"})"),
                      Catch::StartsWith("malformed event"));
    CHECK_THROWS_WITH(decode_event(R"({"type":"leaving","round":2.5,"id":"a","why":"x"})"),
                      Catch::StartsWith("malformed event"));
    auto n = encode(node("a", "n1"));
    n.replace(n.find("\"nproc\":"), 8, "\"nproc\":1e30,\"x\":");
    CHECK_THROWS_WITH(decode_node(n), "node record has a malformed 'nproc'");
}
