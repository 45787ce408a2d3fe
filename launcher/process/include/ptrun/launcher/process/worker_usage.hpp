#pragma once
/// What one worker used, read once when it is reaped: no sampling, no thread. Sources, best
/// first: its own memory cgroup where ptrun made one (--memory-limit-per-worker: the peak of the
/// worker and its descendants, and the OOM kills in it), then wait4's rusage (CPU time, user plus
/// system, of the worker and the descendants it waited for; ru_maxrss, the largest resident set
/// among them), and for an OOM kill the kernel's own record (oom_record.hpp).

#include <sys/resource.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ptrun::launcher {

/// The memory limit that applied to a worker the OOM killer ended.
struct MemoryLimit {
    std::optional<std::uint64_t> bytes;  ///< nullopt: a limit of NUMA nodes (cpuset, mempolicy)
    /// Whose limit: "its memory cgroup (--memory-limit-per-worker)", "the job's memory cgroup
    /// /slurm/job_42", "the node's memory", ...
    std::string whose;
    bool operator==(const MemoryLimit&) const = default;
};

/// What one worker used over its life (nullopt: not known, e.g. never reaped by ptrun).
struct WorkerUsage {
    std::optional<std::uint64_t> peak_bytes;
    bool peak_from_cgroup = false;  ///< peak of its memory cgroup (else ru_maxrss)
    std::optional<double> cpu_seconds;
    int oom_kills = 0;        ///< OOM kills in its memory cgroup, or the kernel's record of it
    bool oom_killed = false;  ///< the worker itself was ended by the kernel's OOM killer
    std::optional<MemoryLimit> limit;  ///< with oom_killed: the limit that applied, when known
    /// SIGKILLed with no record of who did it (/dev/kmsg unreadable) while the node's OOM killer
    /// killed this many processes (/proc/vmstat): a likely cause, said as such; 0 otherwise.
    std::uint64_t node_oom_kills_meanwhile = 0;
    bool operator==(const WorkerUsage&) const = default;
};

/// CPU time (user + system) and ru_maxrss (KiB, as Linux reports it) of a reaped child.
WorkerUsage usage_from_rusage(const rusage& ru);

}  // namespace ptrun::launcher
