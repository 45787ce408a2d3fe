#pragma once
/// The CPUs and memory nodes this process was given (SLURM's cgroup, srun --cpu-bind, taskset,
/// numactl): bindings are made inside them, never outside.

#include <optional>
#include <string_view>

#include "ptrun/placement/id_set.hpp"

namespace ptrun::placement {

struct ProcessLimits {
    IdSet cpus;                 ///< sched_getaffinity of the calling thread
    std::optional<IdSet> mems;  ///< Mems_allowed_list; nullopt when /proc does not say
};

/// This process's limits: sched_getaffinity and /proc/self/status. Throws PlacementError when
/// sched_getaffinity fails.
ProcessLimits read_process_limits();

/// The Mems_allowed_list of a /proc/PID/status text, nullopt when absent. Throws
/// PlacementError when the line is malformed.
std::optional<IdSet> mems_allowed(std::string_view proc_status);

}  // namespace ptrun::placement
