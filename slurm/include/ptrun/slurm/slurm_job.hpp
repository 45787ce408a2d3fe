#pragma once
/// Where this process sits in a SLURM job, read from SLURM_* variables: an env map in, a typed
/// value out; no getenv, no I/O, no host name lookups.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/slurm/parse_error.hpp"

namespace ptrun::slurm {

/// The step (or, in a batch script, the job) this process belongs to, after consistency checks:
/// nodes.size() == num_nodes == tasks_per_node.size(), ntasks == sum(tasks_per_node),
/// node_id < num_nodes, proc_id < ntasks, local_id < tasks_per_node[node_id], no host twice.
struct SlurmJob {
    std::uint32_t job_id = 0;              ///< SLURM_JOB_ID
    std::optional<std::uint32_t> step_id;  ///< SLURM_STEP_ID (SLURM_STEPID); none in a batch script
    std::vector<std::string> nodes;        ///< expanded step node list (job's outside a step)
    int num_nodes = 0;                     ///< nodes in the step
    int node_id = 0;                       ///< SLURM_NODEID: index of this node in `nodes`
    int proc_id = 0;                       ///< SLURM_PROCID: global task rank
    int local_id = 0;                      ///< SLURM_LOCALID: task rank on this node
    int ntasks = 0;                        ///< tasks in the step
    std::vector<int> tasks_per_node;       ///< tasks on each node, in `nodes` order
    std::optional<int> gpus_on_node;       ///< SLURM_GPUS_ON_NODE (only with --gpus*/--gres)
    /// How many devices CUDA_VISIBLE_DEVICES shows, by env::parse_cuda_visible_devices.
    std::optional<int> cuda_visible_devices;
    std::optional<int> cpus_on_node;  ///< SLURM_CPUS_ON_NODE: allocated, not hardware

    bool operator==(const SlurmJob&) const = default;
};

/// The job described by `env`, or nullopt when SLURM_JOB_ID is unset (not inside SLURM). Step
/// variables win over job ones: SLURM_STEP_NODELIST > SLURM_JOB_NODELIST > SLURM_NODELIST;
/// SLURM_STEP_NUM_NODES > SLURM_NNODES > SLURM_JOB_NUM_NODES; SLURM_STEP_NUM_TASKS >
/// SLURM_NTASKS > SLURM_NPROCS > sum of tasks per node; SLURM_STEP_TASKS_PER_NODE >
/// SLURM_TASKS_PER_NODE. Throws ParseError naming the variable and its value when one is
/// malformed, when two contradict each other, or when a required one (node list, tasks per node,
/// SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID) is missing, as in salloc's command on a login node.
std::optional<SlurmJob> slurm_job_from_env(const env::EnvMap& env);

}  // namespace ptrun::slurm
