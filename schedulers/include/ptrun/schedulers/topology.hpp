#pragma once
/// What a launch environment says about this process: the job's nodes and tasks, this task's
/// place, the master host and port, each value with the variables it came from (for --explain
/// and for error messages). Every reader (reader.hpp) returns one.

#include <optional>
#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"

namespace ptrun::schedulers {

/// A value and where it came from: the variable(s), e.g. "OMPI_COMM_WORLD_RANK".
template <class T>
struct Sourced {
    T value{};
    std::string origin;

    bool operator==(const Sourced&) const = default;
};

/// One task of a job as its launcher started it. After check_topology: 0 <= rank < world_size,
/// 0 <= local_rank < local_world_size <= world_size, 1 <= nodes <= world_size,
/// 0 <= node_rank < nodes.
struct Topology {
    LauncherKind kind = LauncherKind::Slurm;
    std::string found_by;  ///< the variable that identified the environment: "FLUX_JOB_ID"
    /// The job's id as the launcher spells it (may be empty when it gives none): run id and port.
    Sourced<std::string> job_id;
    Sourced<int> nodes;                     ///< nodes the job's tasks run on
    Sourced<int> rank;                      ///< this task's global rank
    Sourced<int> world_size;                ///< tasks in the job
    Sourced<int> local_rank;                ///< this task's rank on its node
    Sourced<int> local_world_size;          ///< tasks on this node
    std::optional<Sourced<int>> node_rank;  ///< this node's index; nullopt when not given
    /// The host every task can reach: the master address (the job's first host); nullopt when
    /// the environment names none (then a single-node job uses this host, a multi-node one fails).
    std::optional<Sourced<std::string>> head_host;
    std::optional<Sourced<int>> port;  ///< a master port the environment gives (MASTER_PORT)
    /// The rendezvous run id when the environment names one finer than its job (SLURM's step:
    /// "slurm-<job>.<step>"); nullopt: the launcher makes "<env>-<job id>".
    std::optional<Sourced<std::string>> run_id;
    /// The GPUs the launcher gave this node (SLURM_GPUS_ON_NODE; 0 when it gave none); nullopt
    /// where the environment has no such count (then the devices CUDA_VISIBLE_DEVICES shows).
    std::optional<Sourced<int>> gpus;
    /// True when ptrun runs in the job script itself, once, not as one of the job's tasks (a PBS
    /// batch script without PBS_NODENUM): one node's worth only.
    bool batch_script = false;
};

/// Throws env::ParseError naming the variables when `t` breaks one of the invariants above (a
/// rank not below its size, more nodes than tasks, ...).
void check_topology(const Topology& t);

}  // namespace ptrun::schedulers
