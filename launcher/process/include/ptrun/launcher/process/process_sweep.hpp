#pragma once
/// Finding and ending processes a job left behind, without a cgroup: ptrun is a child subreaper,
/// so a worker's descendants whose parent died become ptrun's children; killing ptrun's children
/// layer by layer (each death hands the next layer to ptrun) ends every descendant. And every
/// worker's environment carries PTRUN_JOB_TAG, so that a later ptrun finds what a SIGKILLed one
/// left under PID 1.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ptrun::launcher {

/// The environment variable naming the job(s) a process belongs to: tags joined by ':' (a ptrun
/// started by a worker appends its own).
inline constexpr const char* kJobTagVariable = "PTRUN_JOB_TAG";

/// ptrun's own children: /proc/self/task/*/children, else a scan of /proc.
std::vector<pid_t> own_children();

/// When `pid` started, in clock ticks since boot (/proc/PID/stat); 0 when it is gone.
std::uint64_t start_ticks(pid_t pid);

/// SIGKILLs ptrun's children and, as each dies, the processes that become ptrun's children in
/// turn, reaping them, until none are left or `within` has passed. Blocks (the job is over).
/// The number of processes killed.
int kill_descendants(std::chrono::milliseconds within);

/// Processes of this user (other than ptrun) whose environment has `tag` in PTRUN_JOB_TAG.
std::vector<pid_t> tagged_processes(const std::string& tag);

}  // namespace ptrun::launcher
