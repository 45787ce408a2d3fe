#pragma once
/// Starting one worker: fork + exec of an argv (never a shell), in its own process group, with a
/// parent-death signal so that even `kill -9` of ptrun ends it.

#include <sys/types.h>

#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/process/short_slice.hpp"
#include "ptrun/placement/apply_binding.hpp"

namespace ptrun::launcher {

/// exec() of a worker failed (the message carries the path and strerror).
struct SpawnError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The descriptor a worker finds the agent's events channel at (PTRUN_EVENTS_SOCKET="fd:4").
inline constexpr int kEventsChildFd = 4;

/// What to start. Output fds of -1 inherit ptrun's own stdout / stderr.
struct SpawnRequest {
    std::string exec_path;
    std::vector<std::string> argv;
    env::EnvMap env;
    int stdout_fd = -1;
    int stderr_fd = -1;
    /// >= 0: the child is created in this cgroup (its directory's fd; clone3 CLONE_INTO_CGROUP) or,
    /// where that is not supported, joins it by writing "0" to `cgroup_procs_fd` (-1: its
    /// cgroup.procs, opened then) before exec; when that fails it goes on outside it and its
    /// errno lands in `*cgroup_errno`.
    int cgroup_dir_fd = -1;
    int cgroup_procs_fd = -1;
    int* cgroup_errno = nullptr;
    /// >= 0: the cgroup.procs of the worker's own memory cgroup (--memory-limit-per-worker, a
    /// second hierarchy on a hybrid machine), which the child joins before exec; when that
    /// fails it exits 127 and spawn_worker throws SpawnError (its limit would not apply).
    int memory_procs_fd = -1;
    /// Non-null: the child binds itself to these CPUs and memory nodes before exec
    /// (--numa-binding); when that fails, it exits 127 and spawn_worker throws SpawnError.
    const placement::PreparedBinding* binding = nullptr;
    /// Lets ptrun's stack tool attach where Yama restricts ptrace to ancestors (the watchdog).
    bool allow_stack_capture = false;
    /// >= 0: becomes the child's fd 3 (the --preload zygote's control socket; a helper started
    /// with inherited stdout / stderr only).
    int control_fd = -1;
    /// >= 0: becomes the child's fd kEventsChildFd (the sending end of the agent's events
    /// channel, which the worker, or the zygote and so its forked workers, inherit).
    int events_fd = -1;
    /// The signals the child sets back to SIG_DFL before exec (signals_to_reset(), taken once by
    /// a caller that starts many workers); null: taken for this worker.
    const sigset_t* reset_signals = nullptr;
    /// Non-null: the scheduling attributes the child sets before exec (ptrun's own, where it
    /// holds a ShortSlice that workers must not inherit).
    const SchedAttributes* sched_attributes = nullptr;
};

/// The signals a worker gets back at their default before exec: those with a handler in ptrun
/// (which must never run in the child) and SIGPIPE, which ptrun ignores; another ignored signal,
/// inherited by ptrun, stays ignored as it would under torchrun. Standard signals only (ptrun
/// handles no other). Valid while ptrun's handlers stay as they are.
sigset_t signals_to_reset();

/// Starts the worker and returns its pid (also its process group id) once exec has succeeded.
/// Blocks only until the child has exec'd. Throws SpawnError when binding or exec fails, and
/// EnvironmentError when the system refuses the process itself (clone: EAGAIN, ENOMEM).
pid_t spawn_worker(const SpawnRequest& request);

/// Sends `signo` to the whole process group `pgid`; a group that is already gone is not an error.
void signal_group(pid_t pgid, int signo);

}  // namespace ptrun::launcher
