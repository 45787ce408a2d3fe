#pragma once
/// What a live worker uses now, read on demand (a request to the health endpoint, an event of the
/// worker's on the timeline): no sampling thread, no timer. Sources: its own memory cgroup where
/// ptrun made one (--memory-limit-per-worker: usage and peak of the worker and its descendants,
/// what its limit counts, and the OOM kills in it), else the worker's own /proc/PID files: statm's
/// resident set now, status's VmHWM (its peak resident set) and stat's CPU times. Without a
/// cgroup the memory is the worker's own process: summing the resident sets of its descendants
/// would count each fork's copy-on-write pages once per process (a DataLoader of 8 workers would
/// read about 9 times the memory in use), and wait4's peak at its exit is per process too.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptrun/launcher/process/memory_cgroup.hpp"

namespace ptrun::launcher {

struct LiveUsage {
    std::optional<std::uint64_t> memory_bytes = std::nullopt;  ///< resident now
    std::optional<std::uint64_t> peak_bytes = std::nullopt;    ///< the largest so far
    /// User + system of the worker and of the descendants it waited for (what wait4 gives at
    /// its exit); descendants still running or never waited for are not in it.
    std::optional<double> cpu_seconds = std::nullopt;
    int oom_kills = 0;  ///< in its memory cgroup (a descendant's); 0 without one
    bool operator==(const LiveUsage&) const = default;
};

/// The resident pages in /proc/PID/statm's text (its second field); nullopt when malformed.
std::optional<std::uint64_t> statm_resident_pages(std::string_view statm);
/// The value in KiB of `key` ("VmHWM") in /proc/PID/status's text; nullopt when absent.
std::optional<std::uint64_t> status_kib(std::string_view status, std::string_view key);
/// utime + stime + cutime + cstime, in clock ticks, from /proc/PID/stat's text (the fields after
/// the command's closing parenthesis, which may itself hold spaces and parentheses).
std::optional<std::uint64_t> stat_cpu_ticks(std::string_view stat);

/// What process `pid` uses now, from /proc under `proc_root`; empty fields where unreadable (a
/// process gone, a zombie's memory).
LiveUsage read_process_usage(pid_t pid, const std::string& proc_root = "/proc");

/// The resident set of process `pid` now (/proc/PID/statm alone: one small read); nullopt when
/// unreadable.
std::optional<std::uint64_t> read_resident_bytes(pid_t pid, const std::string& proc_root = "/proc");

/// `usage` with the memory figures of the worker's own memory cgroup where readable (usage now,
/// peak, page cache included as its limit counts it) and its OOM kills.
LiveUsage with_cgroup_usage(LiveUsage usage, const MemoryCgroup& cgroup);

}  // namespace ptrun::launcher
