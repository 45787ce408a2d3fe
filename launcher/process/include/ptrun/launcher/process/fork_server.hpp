#pragma once
/// A process that forks workers on ptrun's request instead of ptrun starting an interpreter for
/// each (--preload: zygote.hpp). What it forks is ptrun's child like a spawned worker: ptrun is
/// a child subreaper and the server double-forks, so the worker is reaped, signalled and
/// contained as spawn_worker's are.

#include <sys/types.h>

namespace ptrun::launcher {

struct SpawnRequest;

class ForkServer {
  public:
    virtual ~ForkServer() = default;
    /// Forks the worker `request` describes (its argv, environment, output fds and binding),
    /// moves it into the cgroup whose cgroup.procs is `request.cgroup_procs_fd` (-1: none; on
    /// failure its errno lands in `*request.cgroup_errno`), then lets it run. Returns its pid,
    /// also its process group; -1 when this server forks nothing any more (it said why once), and
    /// the caller starts the worker itself.
    virtual pid_t fork_worker(const SpawnRequest& request) = 0;
};

}  // namespace ptrun::launcher
