#pragma once
/// The agent's seam to the processes it supervises (ninja's CommandRunner is the model): it starts
/// the attempt's workers, signals their process groups, ends the attempt, and learns of their
/// exits and stops as events on its loop. ProcessLauncher (process_launcher.hpp) is the real one;
/// tests drive the agent through a fake that scripts exits, in milliseconds.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ptrun/launcher/process/exit_status.hpp"
#include "ptrun/launcher/process/live_usage.hpp"
#include "ptrun/launcher/process/spawn.hpp"
#include "ptrun/launcher/process/worker_usage.hpp"

namespace boost::asio {
class io_context;
}

namespace ptrun::launcher {

class ForkServer;

/// A worker's process changed state (waitpid's view of it).
struct ChildChange {
    enum class Kind { Exited, Stopped, Continued };
    pid_t pid = 0;
    Kind kind = Kind::Exited;
    WorkerExit exit{};    ///< Exited: how
    int stop_signal = 0;  ///< Stopped: by which signal
    WorkerUsage usage{};  ///< Exited: what it used (read once, as it was reaped)
};

class WorkerLauncher {
  public:
    using ChangeHandler = std::function<void(const ChildChange&)>;

    virtual ~WorkerLauncher() = default;

    /// Called once, first, from the agent's loop thread: from now on every change of a worker
    /// launched by this object reaches `changed`, called by a handler on `io` (never from inside
    /// a call of this interface). Sets up what the workers are contained in (may take a moment).
    virtual void open(boost::asio::io_context& io, ChangeHandler changed) = 0;
    /// The agent is finished: no change reaches it any more.
    virtual void close() = 0;
    /// A new attempt starts: what was launched before belongs to attempts that are over.
    virtual void begin_attempt() = 0;
    /// The attempt's workers have all been asked for (launched or sent to the zygote): off the
    /// launch path, for what may wait until they run (the default does nothing).
    virtual void attempt_spawned() {}
    /// Starts one worker of the current attempt in its own process group; returns its pid (the
    /// group's id). Throws SpawnError when it cannot start (its output fds are the caller's).
    virtual pid_t launch(SpawnRequest& request) = 0;
    /// Asks `server` (the --preload zygote) for one worker of the current attempt, tagged and
    /// contained as launch() does; its pid comes to `started` from a handler on the loop (-1:
    /// the server forked nothing: launch() it). Returns the request's ticket (cancel it with
    /// the server), or 0 when the server forks nothing or this launcher forks no workers (the
    /// default): launch() it.
    virtual std::uint64_t fork_worker(ForkServer& server, SpawnRequest& request,
                                      std::function<void(pid_t)> started);
    /// Sends `signo` to the process group `pgid` of a worker of this attempt.
    virtual void signal_group(pid_t pgid, int signo) = 0;
    /// Kills whatever is left of the current attempt (every worker's group and what they
    /// started), without waiting.
    virtual void end_attempt() = 0;
    /// Records a temporary directory the job made, for the cleanup after a kill -9 of ptrun.
    virtual void note_temp_dir(const std::string& path) = 0;
    /// Starts a helper that lives across attempts (the --preload zygote): contained with the
    /// job but never ended by end_attempt(); its exit reaches `exited` on the agent's loop.
    /// Returns its pid. Throws SpawnError when it cannot start, or when this launcher starts no
    /// helpers (the default).
    virtual pid_t launch_helper(SpawnRequest& request,
                                std::function<void(const WorkerExit&)> exited);
    /// What the live (unreaped) worker `pid` uses now, read on demand (live_usage.hpp); the
    /// default reads its /proc files.
    virtual LiveUsage usage_now(pid_t pid) const;
};

}  // namespace ptrun::launcher
