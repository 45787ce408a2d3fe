#pragma once
/// One-task-per-rank launches (`srun --ntasks-per-node=8 ptrun train.py`): the scheduler already
/// placed every rank, so this ptrun runs exactly one worker with a fixed identity and takes part
/// in no rendezvous round. One task of the step hosts the workers' store; the others point their
/// worker at it. There are no restarts: a failing rank ends this task, and the scheduler's own
/// semantics (srun --kill-on-bad-exit, requeue) decide the rest of the step.

#include <functional>
#include <map>
#include <string>

#include "ptrun/env/rank_place.hpp"
#include "ptrun/env/worker_env.hpp"
#include "ptrun/slurm/slurm_job.hpp"

namespace ptrun::launcher {

/// The one worker of this ptrun, as the scheduler placed it (slurm::rank_layout: rank SLURM_PROCID,
/// local rank SLURM_LOCALID, group rank SLURM_NODEID; sizes: tasks and nodes in the step).
struct FixedPlacement : env::RankPlace {
    bool hosts_store = false;  ///< this task starts the store (the first task of the first node)
    /// For --explain: field name ("rank", "world size", ...) -> the variables it came from.
    std::map<std::string, std::string, std::less<>> origins;

    bool operator==(const FixedPlacement&) const = default;
};

/// The placement of the SLURM task `job` describes. The store host is the first task of the
/// step's first node (SLURM_NODEID 0, SLURM_LOCALID 0), which is on head_host(job) whatever the
/// task distribution; usually it is SLURM_PROCID 0. Pure; `origins` is left empty.
FixedPlacement placement_from_slurm(const slurm::SlurmJob& job);

/// Sets `id`'s place to `p`'s (one role: role ranks are the global ones).
void apply_placement(const FixedPlacement& p, env::WorkerIdentity& id);

}  // namespace ptrun::launcher
