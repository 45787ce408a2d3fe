#pragma once
/// The real WorkerLauncher: clone3 into the job's cgroup (spawn.hpp), Containment around every
/// attempt, and SIGCHLD on the agent's loop reaped with waitpid(WUNTRACED | WCONTINUED): exits,
/// stops and continues are events, nothing polls. What each worker used is read once, as it is
/// reaped (wait4's rusage, its memory cgroup, the kernel's OOM record): worker_usage.hpp.

#include <sys/resource.h>
#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ptrun/launcher/process/containment.hpp"
#include "ptrun/launcher/process/memory_cgroup.hpp"
#include "ptrun/launcher/process/short_slice.hpp"
#include "ptrun/launcher/process/worker_launcher.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

struct OomKill;
class WorkerMemoryCgroups;

class ProcessLauncher final : public WorkerLauncher {
  public:
    /// `options`: the job's containment; `inherited_tag`: ptrun's own PTRUN_JOB_TAG ("" when
    /// none), kept ahead of this job's in the workers' tag.
    ProcessLauncher(ContainmentOptions options, std::string inherited_tag,
                    std::shared_ptr<spdlog::logger> log);
    /// Ends what is left (Containment's destructor: blocks a few seconds at most).
    ~ProcessLauncher() override;

    void open(boost::asio::io_context& io, ChangeHandler changed) override;
    void close() override;
    void begin_attempt() override;
    /// Reads the node's OOM-kill count, the baseline usage_at_exit compares with (/proc/vmstat:
    /// read here, while the workers exec, rather than on the launch path).
    void attempt_spawned() override;
    pid_t launch(SpawnRequest& request) override;
    std::uint64_t fork_worker(ForkServer& server, SpawnRequest& request,
                              std::function<void(pid_t)> started) override;
    void signal_group(pid_t pgid, int signo) override;
    void end_attempt() override;
    void note_temp_dir(const std::string& path) override;
    /// Into the job's helper cgroup (Containment::helper_cgroup_dir_fd), never swept by an
    /// attempt's end; reaped here like a worker.
    pid_t launch_helper(SpawnRequest& request,
                        std::function<void(const WorkerExit&)> exited) override;
    /// Its /proc files, its memory cgroup's figures where it has one.
    LiveUsage usage_now(pid_t pid) const override;

  private:
    /// Waits for the next SIGCHLD.
    void wait_child();
    /// Reaps every changed child; hands the attempt's workers' changes to `changed_`.
    void reap();
    /// The running helpers' pids: no attempt's sweep kills them.
    std::vector<pid_t> helper_pids() const;
    /// What the worker `pid`, reaped with `exit` and `ru`, used; forgets what was kept of it.
    WorkerUsage usage_at_exit(pid_t pid, const WorkerExit& exit, const rusage& ru);
    /// The limit an OOM kill the kernel logged as `kill` hit (`own`: the worker's memory cgroup).
    static std::optional<MemoryLimit> limit_of(const OomKill& kill,
                                               const std::optional<MemoryCgroup>& own);

    /// What is kept of a worker while it runs, for its usage at exit.
    struct Tracked {
        std::uint64_t started_us = 0;        ///< kmsg_now_us() at launch
        std::optional<MemoryCgroup> memory;  ///< its own memory cgroup, if any
    };

    ContainmentOptions options_;
    std::string inherited_tag_;
    std::shared_ptr<spdlog::logger> log_;
    std::unique_ptr<Containment> containment_;  ///< made by open()
    /// The supervising thread's short slice, from open() (on the agent's thread) to the end.
    std::unique_ptr<ShortSlice> slice_;
    struct Sigchld;  ///< the SIGCHLD signal_set on the agent's loop
    std::unique_ptr<Sigchld> sigchld_;
    ChangeHandler changed_;
    bool open_ = false;
    std::set<pid_t> attempt_;  ///< every worker launched in the current attempt
    std::set<pid_t> alive_;    ///< those not yet reaped
    std::map<pid_t, std::function<void(const WorkerExit&)>> helpers_;  ///< running helpers
    std::map<pid_t, Tracked> tracked_;  ///< the current attempt's workers not reaped yet
    /// node_oom_kill_count() once the attempt's workers were spawned (attempt_spawned()).
    std::optional<std::uint64_t> node_ooms_at_start_;
    std::unique_ptr<WorkerMemoryCgroups> memory_;  ///< --memory-limit-per-worker
    bool zygote_refusal_said_ = false;
    /// signals_to_reset() at begin_attempt(), for the attempt's workers.
    std::optional<sigset_t> reset_signals_;
};

}  // namespace ptrun::launcher
