#pragma once
/// --requeue: after the workers exited on --checkpoint-signal, one ptrun of the SLURM job (the
/// task of node rank 0) puts the job back in the queue with `scontrol requeue`.

#include <chrono>
#include <optional>
#include <string>

#include "ptrun/env/env_map.hpp"

namespace ptrun::launcher {

/// The job to requeue, and whether this ptrun is the one that requeues it.
struct RequeueTarget {
    std::string job_id;   ///< SLURM_JOB_ID
    bool leader = false;  ///< SLURM_PROCID 0 (node rank 0's task; the batch script's too)
};

/// The SLURM job in `env`; nullopt when SLURM_JOB_ID is unset. Pure.
std::optional<RequeueTarget> requeue_target(const env::EnvMap& env);

/// Runs `scontrol requeue JOB_ID` (scontrol from PATH) and waits for it, at most `deadline`
/// (then kills it). Returns "" on success, else why (its output, exit code, or the timeout).
/// Blocks; no other thread may reap its child.
std::string requeue_slurm_job(const std::string& job_id, std::chrono::milliseconds deadline);

}  // namespace ptrun::launcher
