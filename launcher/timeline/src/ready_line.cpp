#include "ptrun/launcher/timeline/ready_line.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace ptrun::launcher {

namespace {

/// One rank's times in the attempt (store host clock, ns; 0: not yet).
struct RankTimes {
    std::string node;
    std::size_t agent = 0;  ///< its timeline's index: agents are counted, not host names
    std::int64_t started = 0, pg_start = 0, pg_ready = 0, first = 0;
};

std::int64_t on_host(const NodeTimeline& node, const TimelineEvent& e) {
    return static_cast<std::int64_t>(e.t_ns) + node.offset_ns;
}

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

std::string short_duration(double s) {
    char buf[32];
    if (s < 0) s = 0;
    if (s < 1)
        std::snprintf(buf, sizeof buf, "%.0f ms", s * 1000);
    else
        std::snprintf(buf, sizeof buf, "%.2f s", s);
    return buf;
}

std::optional<ReadyBreakdown> ready_breakdown(const std::vector<NodeTimeline>& nodes, int attempt,
                                              std::uint64_t now_ns, int expected_ranks) {
    std::optional<std::int64_t> start, round_closed, preload;
    std::map<int, RankTimes> ranks;
    for (std::size_t agent = 0; agent < nodes.size(); ++agent) {
        const auto& node = nodes[agent];
        for (const auto& e : node.events) {
            if (e.attempt != attempt) continue;
            std::int64_t t = on_host(node, e);
            auto earliest = [&](std::optional<std::int64_t>& slot) {
                slot = slot ? std::min(*slot, t) : t;
            };
            switch (e.phase) {
                case Phase::AgentStart:
                case Phase::RendezvousJoin:
                case Phase::AttemptStart:
                    earliest(start);
                    break;
                case Phase::RoundClosed:
                    round_closed = round_closed ? std::max(*round_closed, t) : t;
                    break;
                case Phase::PreloadSettled:
                    preload = preload ? std::max(*preload, t) : t;
                    break;
                default:
                    break;
            }
            if (e.rank < 0 || !is_rank_phase(e.phase)) continue;
            auto& r = ranks[e.rank];
            r.node = node.node;
            r.agent = agent;
            auto first_time = [&](std::int64_t& slot) {
                if (slot == 0) slot = t;
            };
            switch (e.phase) {
                case Phase::Started:
                    first_time(r.started);
                    break;
                case Phase::ProcessGroupStart:
                    first_time(r.pg_start);
                    break;
                case Phase::ProcessGroupReady:
                    first_time(r.pg_ready);
                    break;
                case Phase::FirstProgress:
                    first_time(r.first);
                    break;
                default:
                    break;
            }
        }
    }
    std::erase_if(ranks, [](const auto& entry) { return entry.second.started == 0; });
    if (ranks.empty()) return std::nullopt;

    ReadyBreakdown b;
    b.attempt = attempt;
    b.ranks = static_cast<int>(ranks.size());
    std::int64_t t0 = start.value_or(ranks.begin()->second.started);
    std::int64_t spawned = 0, pg_call = 0, pg_ready = 0, first = 0;
    bool every_pg = true, every_first = true;
    std::set<std::size_t> agents;  // two agents on one host are two nodes
    for (const auto& [rank, r] : ranks) {
        agents.insert(r.agent);
        spawned = std::max(spawned, r.started);
        every_pg = every_pg && r.pg_start && r.pg_ready;
        pg_call = std::max(pg_call, r.pg_start);
        pg_ready = std::max(pg_ready, r.pg_ready);
        if (r.first == 0) {
            every_first = false;
            b.missing.push_back({rank, r.node});
        }
        first = std::max(first, r.first);
    }
    for (int rank = 0; rank < expected_ranks; ++rank) {
        if (ranks.count(rank)) continue;
        every_first = false;
        b.missing.push_back({rank, ""});
    }
    std::sort(b.missing.begin(), b.missing.end(),
              [](const auto& x, const auto& y) { return x.rank < y.rank; });
    b.nodes = static_cast<int>(agents.size());
    std::int64_t end = every_first ? first : static_cast<std::int64_t>(now_ns);
    b.total_s = seconds(end - t0);
    if (!every_first) return b;

    std::int64_t mark = t0;
    if (round_closed && *round_closed > t0) {
        b.rendezvous_s = seconds(*round_closed - t0);
        mark = *round_closed;
    }
    if (preload && *preload > mark) {
        b.preload_s = seconds(*preload - mark);
        mark = *preload;
    }
    b.spawn_s = seconds(spawned - mark);
    mark = spawned;
    if (every_pg) {
        b.python_s = seconds(pg_call - mark);
        b.process_group_s = seconds(pg_ready - pg_call);
        mark = pg_ready;
    }
    b.first_step_s = seconds(first - mark);
    for (const auto& [rank, r] : ranks) {
        double own = seconds((every_pg ? r.pg_start : r.first) - r.started);
        if (b.slowest_rank < 0 || own > b.slowest_s) {
            b.slowest_rank = rank;
            b.slowest_node = r.node;
            b.slowest_s = own;
        }
    }
    return b;
}

std::vector<std::pair<std::string, double>> startup_phases(const ReadyBreakdown& b) {
    std::vector<std::pair<std::string, double>> out;
    auto add = [&](const char* name, const std::optional<double>& s) {
        if (s) out.emplace_back(name, *s);
    };
    add("rendezvous", b.rendezvous_s);
    add("preload", b.preload_s);
    add("spawn", b.spawn_s);
    add("python_imports", b.python_s);
    add("process_group", b.process_group_s);
    add(b.python_s ? "first_step" : "first_progress", b.first_step_s);
    return out;
}

std::string ready_line(const ReadyBreakdown& b) {
    std::string line = b.attempt == 0 ? "" : "attempt " + std::to_string(b.attempt) + ": ";
    line += std::to_string(b.ranks) + (b.ranks == 1 ? " rank" : " ranks") + " on " +
            std::to_string(b.nodes) + (b.nodes == 1 ? " node " : " nodes ");
    std::string since = b.attempt == 0 ? " after start" : " after the restart";
    if (!b.missing.empty()) {
        line += "not ready " + short_duration(b.total_s) + since + ": no progress yet from ";
        constexpr std::size_t kNamed = 8;
        for (std::size_t i = 0; i < b.missing.size() && i < kNamed; ++i)
            line += (i ? ", rank " : "rank ") + std::to_string(b.missing[i].rank) +
                    (b.missing[i].node.empty() ? " (its node sent no timeline)"
                                               : " on " + b.missing[i].node);
        if (b.missing.size() > kNamed)
            line += " and " + std::to_string(b.missing.size() - kNamed) + " more";
        return line;
    }
    line += "ready " + short_duration(b.total_s) + since + ":";
    std::string sep = " ";
    auto phase = [&](const char* name, const std::optional<double>& s) {
        if (!s) return;
        line += sep + name + " " + short_duration(*s);
        sep = ", ";
    };
    phase("rendezvous", b.rendezvous_s);
    phase("preload", b.preload_s);
    phase("spawn", b.spawn_s);
    std::string slowest = b.slowest_rank < 0
                              ? ""
                              : " (slowest: rank " + std::to_string(b.slowest_rank) + " on " +
                                    b.slowest_node + ", " + short_duration(b.slowest_s) + ")";
    if (b.python_s) {
        phase("python+imports", b.python_s);
        line += slowest;
        phase("process group", b.process_group_s);
        line += sep + "first step +" + short_duration(b.first_step_s.value_or(0));
    } else {
        line += sep + "first progress +" + short_duration(b.first_step_s.value_or(0)) + slowest;
    }
    return line;
}

}  // namespace ptrun::launcher
