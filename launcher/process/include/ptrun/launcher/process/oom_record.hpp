#pragma once
/// The kernel's record of its OOM kills: the node's count (/proc/vmstat oom_kill, Linux >= 4.13)
/// and, where /dev/kmsg can be read (root, or kernel.dmesg_restrict=0), the "oom-kill:" line
/// that names one pid (Linux >= 4.19), with the constraint that applied. Read only when a worker
/// died of SIGKILL and the node's count moved: nothing is sampled.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptrun::launcher {

/// One OOM kill as the kernel logged it.
struct OomKill {
    /// "CONSTRAINT_NONE" (the node's memory), "CONSTRAINT_MEMCG" (a memory cgroup's limit),
    /// "CONSTRAINT_CPUSET", "CONSTRAINT_MEMORY_POLICY"; "" when the line did not say.
    std::string constraint;
    std::string oom_memcg;  ///< with CONSTRAINT_MEMCG: the cgroup whose limit was hit
    bool operator==(const OomKill&) const = default;
};

/// The node's OOM kills so far (/proc/vmstat oom_kill); nullopt where the kernel lacks it.
std::optional<std::uint64_t> node_oom_kill_count();

/// The OOM kill of `pid` in one /dev/kmsg record ("6,12,345678,-;oom-kill:constraint=...,
/// pid=42,uid=0" or "...Killed process 42 (python3) ..."), logged at or after `since_us`
/// (microseconds since boot, CLOCK_MONOTONIC); nullopt when the record is not one.
std::optional<OomKill> parse_oom_record(std::string_view record, pid_t pid, std::uint64_t since_us);

/// Reads /dev/kmsg (non-blocking, the records still in the kernel's buffer) for the OOM kill of
/// `pid` since `since_us`; nullopt when there is none, or when /dev/kmsg cannot be read
/// (`*readable` false then).
std::optional<OomKill> find_oom_kill(pid_t pid, std::uint64_t since_us, bool* readable);

/// Now, in /dev/kmsg's clock (microseconds, CLOCK_MONOTONIC).
std::uint64_t kmsg_now_us();

/// The node's memory (MemTotal of /proc/meminfo), bytes; nullopt when unreadable.
std::optional<std::uint64_t> node_memory_bytes();

}  // namespace ptrun::launcher
