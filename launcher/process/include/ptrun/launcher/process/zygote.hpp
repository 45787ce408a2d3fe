#pragma once
/// --preload, ptrun's side: one Python interpreter per node, the runner started with `--zygote
/// MODULES` (python/ptrun/_zygote.py), imports the modules once, and every worker of every
/// attempt is forked from it. The channel is a SOCK_SEQPACKET socket, the zygote's fd 3, one JSON
/// object per message:
///   zygote -> ptrun, once:  {"ready": {"modules": [...], "seconds": S}} | {"failed": {"module",
///                           "error", "traceback"}} (exit 3) | {"unsafe": "why"} (exit 0)
///   ptrun -> zygote:        {"fork": {"argv_hex", "env_hex", "cwd_hex", "parent",
///                           "allow_ptrace", "binding"}} with SCM_RIGHTS [stdout, stderr, go]
///   zygote -> ptrun:        {"forked": PID} | {"unsafe": "why"} (exit 0) | {"error": "what"}
/// Byte strings travel hex-encoded (an argument or variable need not be UTF-8). Requests may
/// follow one another before their answers, which come in order and are read on the loop: a
/// slow zygote (a before-fork hook) holds nothing of ptrun's up. The zygote
/// double-forks: the worker is re-parented to ptrun (a child subreaper) before its pid comes
/// back; it waits on the "go" pipe until ptrun has put it in its process group and cgroup.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "ptrun/launcher/process/exit_status.hpp"
#include "ptrun/launcher/process/fork_server.hpp"
#include "ptrun/launcher/process/spawn.hpp"

namespace boost::asio {
class io_context;
}

namespace ptrun::launcher {

class WorkerLauncher;

/// A preloaded module that failed to import (the zygote's `failed` message).
struct ImportFailure {
    std::string module;
    std::string error;      ///< "ExceptionType: message"
    std::string traceback;  ///< its formatted traceback (bounded)
};

class Zygote final : public ForkServer {
  public:
    /// What the zygote says, on the agent's loop; each is called at most once, and after
    /// `import_failed` or `unusable` nothing else is.
    struct Handlers {
        std::function<void(double seconds)> ready;                ///< forks from now on
        std::function<void(const ImportFailure&)> import_failed;  ///< never ready
        std::function<void(const std::string& why)> unusable;     ///< forks nothing (any more)
    };

    /// Starts the zygote through `launcher` as a helper (`request`: its exec path, argv and
    /// environment) and reads its messages on `io`. `runner`: the runner's path in the workers'
    /// argv (what follows it is sent for each worker). Throws SpawnError when it cannot start.
    Zygote(boost::asio::io_context& io, WorkerLauncher& launcher, SpawnRequest request,
           std::string runner, Handlers handlers);
    /// Closes the channel: the zygote exits at its end (containment ends it with the job anyway).
    ~Zygote() override;
    Zygote(const Zygote&) = delete;
    Zygote& operator=(const Zygote&) = delete;

    /// The zygote's pid.
    pid_t pid() const;
    /// True once it said `ready` and until it became unusable.
    bool ready() const;
    std::uint64_t fork_worker(const SpawnRequest& request, Forked forked) override;
    void cancel(std::uint64_t ticket) override;

  private:
    struct State;
    std::shared_ptr<State> state_;  ///< shared with the handlers on the loop (weakly)
};

}  // namespace ptrun::launcher
