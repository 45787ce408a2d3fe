#pragma once
/// Memory cgroups: where the memory controller is (cgroup v2, or v1 on a hybrid machine such as
/// /sys/fs/cgroup/memory), the one ptrun runs in (the job's limit: SLURM --mem, a container's),
/// and the counters read once at a worker's exit: peak, OOM kills, limit.

#include <cstdint>
#include <optional>
#include <string>

#include "ptrun/launcher/process/worker_usage.hpp"

namespace ptrun::launcher {

/// One memory cgroup's directory and the version of its hierarchy (1 or 2).
struct MemoryCgroup {
    std::string path;  ///< as /proc/PID/cgroup and the kernel's OOM lines name it: "/slurm/job_1"
    std::string dir;   ///< its directory: "/sys/fs/cgroup/memory/slurm/job_1"
    int version = 0;
};

/// The memory cgroup at `path` (relative to the memory hierarchy's root), where this machine's
/// memory controller is; nullopt without one (no v1 memory mount, no memory in v2's controllers).
std::optional<MemoryCgroup> memory_cgroup_at(const std::string& path);

/// The memory cgroup ptrun runs in; nullopt without a memory controller.
std::optional<MemoryCgroup> own_memory_cgroup();

/// Its limit in bytes (v2 memory.max, v1 memory.limit_in_bytes); nullopt when unlimited.
std::optional<std::uint64_t> memory_limit(const MemoryCgroup& cgroup);

/// The most memory it (its processes and their descendants) ever used (v2 memory.peak, Linux
/// >= 5.19; v1 memory.max_usage_in_bytes); nullopt when not readable.
std::optional<std::uint64_t> memory_peak(const MemoryCgroup& cgroup);

/// Its memory use now (v2 memory.current, v1 memory.usage_in_bytes); nullopt when not readable.
std::optional<std::uint64_t> memory_current(const MemoryCgroup& cgroup);

/// The OOM kills inside it (v2 memory.events, v1 memory.oom_control: "oom_kill N", Linux >=
/// 4.13); 0 when not readable.
std::uint64_t memory_oom_kills(const MemoryCgroup& cgroup);

/// The tightest limit of `cgroup` and of its ancestors up to its hierarchy's root (a SLURM
/// job's limit sits on job_N, above the task's cgroup ptrun runs in), named as the OOM report
/// names it: "the job's memory cgroup /slurm/job_1"; nullopt when none is limited.
std::optional<MemoryLimit> cgroup_memory_limit(MemoryCgroup cgroup);

/// The memory limit that applies to a job ptrun starts here without --memory-limit-per-worker:
/// its own memory cgroup's (cgroup_memory_limit), else the node's memory (MemTotal).
MemoryLimit job_memory_limit();

}  // namespace ptrun::launcher
