#pragma once
/// A process that forks workers on ptrun's request instead of ptrun starting an interpreter for
/// each (--preload: zygote.hpp). What it forks is ptrun's child like a spawned worker: ptrun is
/// a child subreaper and the server double-forks, so the worker is reaped, signalled and
/// contained as spawn_worker's are. A request never blocks ptrun's loop: its answer comes later,
/// as an event on the loop.

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace ptrun::launcher {

struct SpawnRequest;

class ForkServer {
  public:
    /// A fork request's outcome: the worker's pid (also its process group), and the errno of its
    /// cgroup join (0: joined, or none asked); it runs once this returns. pid -1: the server
    /// forked nothing (it said why once) and the caller starts the worker itself.
    using Forked = std::function<void(pid_t pid, int cgroup_errno)>;

    virtual ~ForkServer() = default;
    /// Asks for the worker `request` describes (its argv, environment, output fds, binding; the
    /// caller may close its fds once this returns), to be moved into the cgroup whose
    /// cgroup.procs is `request.cgroup_procs_fd` (-1: none) before it runs. `forked` is called
    /// once, from a handler on the loop, never from inside this call. Returns the request's
    /// ticket (> 0), or 0 when this server forks nothing any more (`forked` is never called).
    virtual std::uint64_t fork_worker(const SpawnRequest& request, Forked forked) = 0;
    /// The request `ticket` is no longer wanted: its `forked` is never called, and a worker
    /// forked for it is killed before it runs. Unknown or answered tickets are ignored.
    virtual void cancel(std::uint64_t ticket) = 0;
};

}  // namespace ptrun::launcher
