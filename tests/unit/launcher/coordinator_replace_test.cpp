// CoordinatorCore under --restart-policy failed: a spare takes a lost member's place in the
// running round (ReplaceMember) instead of the round ending, when it can.
#include <catch2/catch.hpp>
#include <optional>

#include "ptrun/launcher/membership/coordinator_core.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;

namespace {

const SteadyTime t0{};

CoordinatorPolicy failed_policy(int max_restarts, bool fixed_store = true) {
    CoordinatorPolicy p;
    p.min_nodes = 2;
    p.max_nodes = 2;
    p.max_restarts = max_restarts;
    p.replace_failed = true;
    p.last_call = 10s;
    p.lost_after = 3s;
    p.heartbeat = 1s;
    if (fixed_store) {
        p.master_addr = "head";
        p.master_port = 29400;
    }
    return p;
}

std::vector<CoordinatorCommand> join(CoordinatorCore& c, const std::string& id, int nproc = 2,
                                     int max_restarts = 1) {
    JoinEvent e;
    e.node.id = id;
    e.node.hostname = "host-" + id;
    e.node.nproc = nproc;
    e.node.max_restarts = max_restarts;
    e.node.replace_failed = true;
    e.seq = 1;
    return c.on_event(e, t0);
}

template <typename T>
std::optional<T> find(const std::vector<CoordinatorCommand>& cmds) {
    for (const auto& c : cmds) {
        if (auto p = std::get_if<T>(&c)) return *p;
    }
    return std::nullopt;
}

}  // namespace

TEST_CASE(
    "coordinator, restart policy failed: a silent member's place goes to a spare and the "
    "round goes on",
    "[launcher][coordinator][spares]") {
    CoordinatorCore c(failed_policy(1));
    join(c, "a");
    join(c, "b");
    join(c, "c");  // a spare
    c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 1s);
    auto out = c.on_beats({{"a", 2}, {"b", 1}, {"c", 2}}, t0 + 5s);
    CHECK_FALSE(find<EndRound>(out));
    auto replaced = find<ReplaceMember>(out);
    REQUIRE(replaced);
    CHECK(replaced->group_rank == 1);
    CHECK(replaced->admitted == std::pair<std::string, int>{"c", 1});
    CHECK(replaced->lost_host == "host-b");
    CHECK(replaced->lost_id == "b");
    CHECK(replaced->assignment.round == 0);
    CHECK(replaced->assignment.members[1].id == "c");
    const auto placed = placements(replaced->assignment)[1];
    CHECK(placed.rank_base == 2);
    CHECK(placed.world_size == 4);
    CHECK(c.spares().empty());

    SECTION("the round completes with the spare's success in the lost member's place") {
        c.on_event(SucceededEvent{0, "a"}, t0 + 6s);
        auto done = find<EndRound>(c.on_event(SucceededEvent{0, "c"}, t0 + 6s));
        REQUIRE(done);
        CHECK(done->end.reason == EndReason::Complete);
    }
    SECTION("the lost member's late reports are no longer the round's") {
        FailedEvent late{0, "b", RoundEnd{.reason = EndReason::Failure, .exit_code = 1}};
        CHECK(c.on_event(late, t0 + 6s).empty());
    }
    SECTION("a spare that never shows ends the round without costing a restart") {
        c.on_beats({{"a", 3}, {"c", 2}}, t0 + 6s);  // its counter read once, then never again
        auto end = find<EndRound>(c.on_beats({{"a", 4}, {"c", 2}}, t0 + 10s));
        REQUIRE(end);
        CHECK(end->end.reason == EndReason::Regroup);
    }
}

TEST_CASE(
    "coordinator, restart policy failed: without a fitting spare or restarts the round "
    "ends as under group",
    "[launcher][coordinator][spares]") {
    SECTION("the spare runs another number of workers") {
        CoordinatorCore c(failed_policy(1));
        join(c, "a");
        join(c, "b");
        join(c, "c", 4);
        c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 1s);
        auto out = c.on_beats({{"a", 2}, {"b", 1}, {"c", 2}}, t0 + 5s);
        CHECK_FALSE(find<ReplaceMember>(out));
        REQUIRE(find<EndRound>(out));
    }
    SECTION("restarts are exhausted") {
        CoordinatorCore c(failed_policy(0));
        join(c, "a", 2, 0);
        join(c, "b", 2, 0);
        join(c, "c", 2, 0);
        c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 1s);
        auto end = find<EndRound>(c.on_beats({{"a", 2}, {"b", 1}, {"c", 2}}, t0 + 5s));
        REQUIRE(end);
        CHECK(end->end.final);
    }
    SECTION("the lost member held the round's workers' store (etcd, file backends)") {
        CoordinatorCore c(failed_policy(1, false));
        join(c, "a");
        join(c, "b");
        join(c, "c");
        c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 1s);
        auto out = c.on_beats({{"a", 1}, {"b", 2}, {"c", 2}}, t0 + 5s);  // a, group rank 0
        CHECK_FALSE(find<ReplaceMember>(out));
        REQUIRE(find<EndRound>(out));
    }
    SECTION("another member's workers already succeeded: a new generation cannot be joined") {
        CoordinatorCore c(failed_policy(1));
        join(c, "a");
        join(c, "b");
        join(c, "c");
        c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 1s);
        c.on_event(SucceededEvent{0, "a"}, t0 + 2s);
        auto out = c.on_beats({{"a", 2}, {"b", 1}, {"c", 2}}, t0 + 5s);
        CHECK_FALSE(find<ReplaceMember>(out));
        REQUIRE(find<EndRound>(out));
    }
}

TEST_CASE("coordinator, restart policy failed: a member that checkpointed is not replaced",
          "[launcher][coordinator][spares][checkpoint]") {
    CoordinatorCore c(failed_policy(3));
    join(c, "a", 2, 3);
    join(c, "b", 2, 3);
    join(c, "c", 2, 3);  // a spare
    auto out = c.on_event(LeavingEvent{0, "b", "stopped by SIGUSR1", true, 138}, t0 + 1s);
    CHECK_FALSE(find<ReplaceMember>(out));
    auto end = find<EndRound>(out);
    REQUIRE(end);
    CHECK(end->end.reason == EndReason::Checkpoint);
    CHECK(end->end.final);
    CHECK(find<RejectJoin>(out));  // the spare goes with the job
}
