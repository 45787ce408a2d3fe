#pragma once
/// Pure inference from a SlurmJob: what the launcher uses when the command line leaves a value out
/// (an explicit option always wins; that choice is the launcher's, not made here).

#include <cstdint>
#include <optional>
#include <string>

#include "ptrun/env/rank_place.hpp"
#include "ptrun/slurm/slurm_job.hpp"

namespace ptrun::slurm {

/// First port derive_port() can return: torchrun's default master port.
inline constexpr std::uint16_t kPortBase = 29500;
/// How many ports derive_port() spreads jobs over: kPortBase..kPortBase + kPortSpan - 1.
inline constexpr std::uint16_t kPortSpan = 2000;

/// The rendezvous host: the first host of the step's node list (never HOSTNAME, never
/// SLURM_SRUN_COMM_HOST). Throws std::invalid_argument when `job.nodes` is empty.
std::string head_host(const SlurmJob& job);

/// A master port every node of a job computes alike without talking:
/// 29500 + job_id % 2000, so 29500..31499 — unprivileged (> 1023) and below Linux's default
/// ephemeral range (32768..60999), so no outgoing connection holds it by chance. Consecutive job
/// ids get different ports, so jobs sharing a head node do not collide unless their ids differ by
/// a multiple of 2000. Two concurrent steps of one job on one head node need an explicit port.
std::uint16_t derive_port(std::uint32_t job_id);

/// The rendezvous run id: "slurm-<job_id>.<step_id>", or "slurm-<job_id>" without a step.
std::string run_id(const SlurmJob& job);

/// GPUs this process may use: the count of CUDA_VISIBLE_DEVICES when set (it is what the workers
/// will see, and SLURM sets it with --gpus*), else SLURM_GPUS_ON_NODE, else nullopt (no GPU info).
std::optional<int> gpus_on_node(const SlurmJob& job);

/// How SLURM started this process. PerNode: one task per node, ptrun spawns the node's workers
/// (`srun --ntasks-per-node=1 ptrun ...`). PerRank: SLURM started one task per rank already
/// (`srun --ntasks-per-node=8 ptrun ...`), so ptrun runs exactly one worker, the task's rank.
enum class TaskMode { PerNode, PerRank };

/// PerRank when the step has more tasks than nodes (ntasks > num_nodes), else PerNode.
TaskMode detect_task_mode(const SlurmJob& job);

/// The place of this task as SLURM assigned it, for TaskMode::PerRank: rank SLURM_PROCID,
/// local rank SLURM_LOCALID, world size the step's task count, local world size this node's share
/// of it (0 when the node list has no entry for SLURM_NODEID), group rank SLURM_NODEID, group world
/// size the step's node count. Valid in either mode; in PerNode it describes ptrun's own task,
/// not its workers.
env::RankPlace rank_layout(const SlurmJob& job);

}  // namespace ptrun::slurm
