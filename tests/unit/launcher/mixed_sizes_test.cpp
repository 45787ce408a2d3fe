// Nodes with different worker counts in one elastic job (one node --nproc-per-node 4, another
// 2): every round's global ranks and WORLD_SIZE, as each node's admission (NodePlacement) gives
// them, across a failure restart, a scale-up and a lost node.
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>

#include "ptrun/launcher/membership/coordinator_core.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;

namespace {

const SteadyTime t0{};

CoordinatorPolicy elastic(int min, int max) {
    CoordinatorPolicy p;
    p.min_nodes = min;
    p.max_nodes = max;
    p.max_restarts = 3;
    p.last_call = 10s;
    p.lost_after = 3s;
    p.master_addr = "head";
    p.master_port = 29400;
    return p;
}

std::vector<CoordinatorCommand> join(CoordinatorCore& c, const std::string& id, int nproc, int seq,
                                     SteadyTime at, int node_rank = -1) {
    JoinEvent e;
    e.node.node_rank = node_rank;
    e.node.id = id;
    e.node.hostname = "host-" + id;
    e.node.nproc = nproc;
    e.node.max_restarts = 3;
    e.seq = seq;
    return c.on_event(e, at);
}

template <typename T>
std::optional<T> find(const std::vector<CoordinatorCommand>& cmds) {
    for (const auto& cmd : cmds) {
        if (auto p = std::get_if<T>(&cmd)) return *p;
    }
    return std::nullopt;
}

/// Each member's global ranks as its agent starts them (rank_base + local rank), checked to
/// tile 0..WORLD_SIZE-1 exactly once with every node seeing the same WORLD_SIZE.
std::map<std::string, std::pair<int, int>> ranks_of(const RoundAssignment& a) {
    auto shares = placements(a);
    REQUIRE(shares.size() == a.members.size());
    std::map<std::string, std::pair<int, int>> out;
    std::set<int> seen;
    for (std::size_t g = 0; g < shares.size(); ++g) {
        const auto& p = shares[g];
        CHECK(p.world_size == a.world_size());
        CHECK(p.group_rank == static_cast<int>(g));
        CHECK(p.restart_count == a.restart_count);
        int nproc = a.members[g].nproc;
        for (int local = 0; local < nproc; ++local) CHECK(seen.insert(p.rank_base + local).second);
        out[a.members[g].id] = {p.rank_base, p.rank_base + nproc - 1};
    }
    CHECK(seen.size() == static_cast<std::size_t>(a.world_size()));
    CHECK(*seen.rbegin() == a.world_size() - 1);
    return out;
}

using Span = std::pair<int, int>;

}  // namespace

TEST_CASE("nodes of different sizes get disjoint global ranks and one WORLD_SIZE in every round",
          "[launcher][coordinator]") {
    CoordinatorCore c(elastic(2, 3));
    join(c, "a", 4, 1, t0);
    auto round = find<PublishRound>(join(c, "b", 2, 1, t0 + 1s));
    REQUIRE_FALSE(round);  // MIN met: the last call admits up to MAX
    round = find<PublishRound>(c.on_tick(t0 + 11s));
    REQUIRE(round);
    CHECK(round->assignment.world_size() == 6);
    CHECK(ranks_of(round->assignment) == std::map<std::string, Span>{{"a", {0, 3}}, {"b", {4, 5}}});

    // A failure restarts both nodes: same sizes, same ranks, the restart counted.
    RoundEnd failure{EndReason::Failure, false, 1, "host-b", 5, "rank 5 failed"};
    REQUIRE(find<EndRound>(c.on_event(FailedEvent{0, "b", failure}, t0 + 12s)));
    join(c, "b", 2, 2, t0 + 13s);
    round = find<PublishRound>(join(c, "a", 4, 2, t0 + 13s));
    REQUIRE(round);
    CHECK(round->assignment.restart_count == 1);
    CHECK(ranks_of(round->assignment) == std::map<std::string, Span>{{"a", {0, 3}}, {"b", {4, 5}}});

    // A third node of 3 workers arrives: scale-up to 9 ranks, not a restart.
    auto end = find<EndRound>(join(c, "c", 3, 1, t0 + 20s));
    REQUIRE(end);
    CHECK(end->end.reason == EndReason::ScaleUp);
    join(c, "a", 4, 3, t0 + 21s);
    round = find<PublishRound>(join(c, "b", 2, 3, t0 + 21s));
    REQUIRE(round);
    CHECK(round->assignment.restart_count == 1);
    CHECK(round->assignment.world_size() == 9);
    CHECK(ranks_of(round->assignment) ==
          std::map<std::string, Span>{{"a", {0, 3}}, {"b", {4, 5}}, {"c", {6, 8}}});

    // b goes silent: a and c re-form with 7 ranks, c's shifted down.
    CHECK(c.on_beats({{"a", 1}, {"b", 1}, {"c", 1}}, t0 + 22s).empty());
    end = find<EndRound>(c.on_beats({{"a", 2}, {"b", 1}, {"c", 2}}, t0 + 26s));
    REQUIRE(end);
    CHECK(end->end.reason == EndReason::NodeLost);
    join(c, "c", 3, 2, t0 + 27s);
    round = find<PublishRound>(join(c, "a", 4, 4, t0 + 27s));
    REQUIRE(round);
    CHECK(round->assignment.restart_count == 2);
    CHECK(round->assignment.world_size() == 7);
    CHECK(ranks_of(round->assignment) == std::map<std::string, Span>{{"a", {0, 3}}, {"c", {4, 6}}});
}

TEST_CASE("static rendezvous: nodes of different sizes get ranks in --node-rank order",
          "[launcher][coordinator]") {
    // --rdzv-backend static: a fixed node count, every node's --node-rank given; the bigger node
    // is node rank 1, so node 0's ranks come first whatever the order of joining.
    CoordinatorCore c(elastic(2, 2));
    join(c, "big", 4, 1, t0, 1);
    auto round = find<PublishRound>(join(c, "small", 2, 1, t0 + 1s, 0));
    REQUIRE(round);
    CHECK(round->assignment.world_size() == 6);
    CHECK(ranks_of(round->assignment) ==
          std::map<std::string, Span>{{"small", {0, 1}}, {"big", {2, 5}}});

    RoundEnd failure{EndReason::Failure, false, 1, "host-big", 2, "rank 2 failed"};
    REQUIRE(find<EndRound>(c.on_event(FailedEvent{0, "big", failure}, t0 + 2s)));
    join(c, "small", 2, 2, t0 + 3s, 0);
    round = find<PublishRound>(join(c, "big", 4, 2, t0 + 3s, 1));
    REQUIRE(round);
    CHECK(round->assignment.restart_count == 1);
    CHECK(ranks_of(round->assignment) ==
          std::map<std::string, Span>{{"small", {0, 1}}, {"big", {2, 5}}});
}
