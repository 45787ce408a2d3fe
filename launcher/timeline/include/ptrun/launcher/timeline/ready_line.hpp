#pragma once
/// The ready line: once per attempt, when every rank has made its first progress, where the time
/// from the start went, phase by phase along the slowest path (each phase ends when its last rank
/// gets there, so the phases add up to the total):
///   8 ranks on 2 nodes ready 1.04 s after start: rendezvous 3 ms, spawn 5 ms, python+imports
///   0.81 s (slowest: rank 5 on node2, 1.20 s), process group 0.18 s, first step +0.05 s
/// The start is ptrun's start for attempt 0 (the earliest node's), else the attempt's first
/// rendezvous join or start. `preload` is the wait for --preload's zygote past the rendezvous.
/// Phases a job does not have are left out (no rendezvous on one node;
/// no process group when the workers call no init_process_group, or run without the runner).

#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/timeline/timeline_event.hpp"

namespace ptrun::launcher {

/// One rank that has not made its first progress.
struct MissingRank {
    int rank = 0;
    std::string node;  ///< "" when no node's timeline has this rank (its node sent none)
    bool operator==(const MissingRank&) const = default;
};

/// Attempt `attempt` of the merged timelines, in seconds on the store host's clock.
struct ReadyBreakdown {
    int attempt = 0;
    int ranks = 0;  ///< ranks started in the attempt
    int nodes = 0;  ///< nodes with a rank in it
    /// Started ranks without first progress, and ranks below `expected_ranks` no timeline has
    /// (rank order).
    std::vector<MissingRank> missing;
    double total_s = 0;  ///< start to the last first progress (or to `now_ns`)
    std::optional<double> rendezvous_s, preload_s, spawn_s, python_s, process_group_s, first_step_s;
    int slowest_rank = -1;  ///< the longest from running to calling init_process_group (or to
                            ///< its first progress without one); -1: none
    std::string slowest_node;
    double slowest_s = 0;
};

/// The breakdown of `attempt` across `nodes` (each node's offset applied); nullopt when no rank
/// of it has started. `now_ns` (store host clock) ends the total while ranks are missing. Ranks
/// 0 to `expected_ranks` - 1 that no timeline has are missing too (the job's world size on the
/// store host; 0: only the ranks the timelines have).
std::optional<ReadyBreakdown> ready_breakdown(const std::vector<NodeTimeline>& nodes, int attempt,
                                              std::uint64_t now_ns, int expected_ranks = 0);

/// The line as printed: "8 ranks on 2 nodes ready ... first step +0.05 s" when none is missing,
/// else "... not ready 120 s after start: no progress yet from rank 3 on node2, ...".
std::string ready_line(const ReadyBreakdown& breakdown);

/// The complete breakdown's phases in order, named as /metrics names them: rendezvous, preload,
/// spawn, python_imports, process_group, first_step (or first_progress); those it has.
std::vector<std::pair<std::string, double>> startup_phases(const ReadyBreakdown& breakdown);

/// "3 ms" under a second, "1.04 s" from there.
std::string short_duration(double seconds);

}  // namespace ptrun::launcher
