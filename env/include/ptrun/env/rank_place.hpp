#pragma once
/// Where one worker stands in the job: the six numbers of torchrun's contract that say so.

namespace ptrun::env {

/// One worker's ranks and sizes (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
/// GROUP_WORLD_SIZE); the launcher's, the scheduler's and the worker's view of a rank share it.
/// Defaults: a world of one. Identities that carry more (RankInfo, WorkerIdentity, RunContext,
/// FixedPlacement) derive from it, so one place is copied with one assignment: `id.place() = p;`.
struct RankPlace {
    int rank = 0;
    int local_rank = 0;
    int world_size = 1;
    int local_world_size = 1;
    int group_rank = 0;        ///< the node's rank (torchrun's group: one agent's workers)
    int group_world_size = 1;  ///< nodes (agents) in the job

    /// This place alone, to read or assign without the deriving type's other fields.
    RankPlace& place() { return *this; }
    const RankPlace& place() const { return *this; }

    bool operator==(const RankPlace&) const = default;
};

}  // namespace ptrun::env
