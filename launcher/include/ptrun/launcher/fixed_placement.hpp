#pragma once
/// One-task-per-rank launches (`srun --ntasks-per-node=8 ptrun train.py`): the scheduler already
/// placed every rank, so this ptrun runs exactly one worker with a fixed identity and takes part
/// in no rendezvous round. One task of the step hosts the workers' store; the others point their
/// worker at it. There are no restarts: a failing rank ends this task, and the scheduler's own
/// semantics (srun --kill-on-bad-exit, requeue) decide the rest of the step.

#include <functional>
#include <map>
#include <string>

#include "ptrun/env/worker_env.hpp"
#include "ptrun/slurm/slurm_job.hpp"

namespace ptrun::launcher {

/// The one worker of this ptrun, as the scheduler placed it.
struct FixedPlacement {
    int rank = 0;              ///< RANK: SLURM_PROCID
    int local_rank = 0;        ///< LOCAL_RANK: SLURM_LOCALID
    int world_size = 1;        ///< WORLD_SIZE: tasks in the step
    int local_world_size = 1;  ///< LOCAL_WORLD_SIZE: tasks on this node
    int group_rank = 0;        ///< GROUP_RANK: SLURM_NODEID
    int group_world_size = 1;  ///< GROUP_WORLD_SIZE: nodes in the step
    bool hosts_store = false;  ///< this task starts the store (the first task of the first node)
    /// For --explain: field name ("rank", "world size", ...) -> the variables it came from.
    std::map<std::string, std::string, std::less<>> origins;

    bool operator==(const FixedPlacement&) const = default;
};

/// The placement of the SLURM task `job` describes. The store host is the first task of the
/// step's first node (SLURM_NODEID 0, SLURM_LOCALID 0), which is on head_host(job) whatever the
/// task distribution; usually it is SLURM_PROCID 0. Pure; `origins` is left empty.
FixedPlacement placement_from_slurm(const slurm::SlurmJob& job);

/// Sets every rank and size field of `id` from `p` (one role: role ranks are the global ones).
void apply_placement(const FixedPlacement& p, env::WorkerIdentity& id);

}  // namespace ptrun::launcher
