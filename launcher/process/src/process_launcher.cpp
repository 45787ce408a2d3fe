#include "ptrun/launcher/process/process_launcher.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <vector>

#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/launcher/process/fork_server.hpp"
#include "ptrun/launcher/process/oom_record.hpp"
#include "ptrun/launcher/process/process_sweep.hpp"
#include "ptrun/launcher/process/worker_memory_cgroups.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {

struct ProcessLauncher::Sigchld {
    explicit Sigchld(boost::asio::io_context& io) : set(io, SIGCHLD) {}
    boost::asio::signal_set set;
};

ProcessLauncher::ProcessLauncher(ContainmentOptions options, std::string inherited_tag,
                                 std::shared_ptr<spdlog::logger> log)
    : options_(std::move(options)),
      inherited_tag_(std::move(inherited_tag)),
      log_(std::move(log)) {}

ProcessLauncher::~ProcessLauncher() {
    slice_.reset();                        // on the thread that took it (the agent's)
    sigchld_.reset();                      // before the loop it was made on goes
    if (memory_) memory_->kill_workers();  // v2: outside the job's cgroup (its own)
    containment_.reset();                  // ends what is left
    memory_.reset();                       // then the workers' memory cgroups, empty by now
}

void ProcessLauncher::open(boost::asio::io_context& io, ChangeHandler changed) {
    changed_ = std::move(changed);
    // Also cleans what SIGKILLed ptruns left (main made ptrun a subreaper).
    containment_ = std::make_unique<Containment>(options_, log_);
    if (options_.memory_limit_per_worker) {
        std::string error;
        memory_ = WorkerMemoryCgroups::create(*options_.memory_limit_per_worker, &error);
        if (!memory_) throw EnvironmentError("--memory-limit-per-worker: " + error);
        log_->debug("memory cgroups of the workers (cgroup v{}): {}", memory_->version(),
                    memory_->dir());
    }
    sigchld_ = std::make_unique<Sigchld>(io);
    slice_ = std::make_unique<ShortSlice>();  // run() supervises on this thread
    open_ = true;
    wait_child();
}

void ProcessLauncher::close() {
    open_ = false;
    if (sigchld_) {
        boost::system::error_code ignored;
        sigchld_->set.cancel(ignored);
    }
}

void ProcessLauncher::wait_child() {
    sigchld_->set.async_wait([this](boost::system::error_code ec, int) {
        if (ec || !open_) return;
        reap();
        if (open_) wait_child();
    });
}

void ProcessLauncher::reap() {
    int status = 0;
    pid_t pid;
    rusage ru{};
    // WUNTRACED: a worker stopped (on the terminal, by SIGSTOP) is said at once, never waited on;
    // WCONTINUED: one continued by someone else (kill -CONT) is no longer stopped. wait4: what
    // an exited worker used comes with it.
    while (open_ && (pid = ::wait4(-1, &status, WNOHANG | WUNTRACED | WCONTINUED, &ru)) > 0) {
        if (auto helper = helpers_.find(pid); helper != helpers_.end()) {
            if (WIFSTOPPED(status) || WIFCONTINUED(status)) continue;
            auto exited = std::move(helper->second);
            helpers_.erase(helper);
            if (exited) exited(from_wait_status(status));
            continue;
        }
        if (!alive_.count(pid)) continue;  // an orphan ptrun inherited, or an earlier attempt's
        ChildChange change;
        change.pid = pid;
        if (WIFCONTINUED(status)) {
            change.kind = ChildChange::Kind::Continued;
        } else if (WIFSTOPPED(status)) {
            change.kind = ChildChange::Kind::Stopped;
            change.stop_signal = WSTOPSIG(status);
        } else {
            change.kind = ChildChange::Kind::Exited;
            change.exit = from_wait_status(status);
            change.usage = usage_at_exit(pid, change.exit, ru);
            alive_.erase(pid);
        }
        changed_(change);
    }
    if (!open_) return;
    auto spared = helper_pids();  // and the attempt's live workers: orphans of attempts over
    spared.insert(spared.end(), alive_.begin(), alive_.end());
    containment_->children_reaped(spared);
}

WorkerUsage ProcessLauncher::usage_at_exit(pid_t pid, const WorkerExit& exit, const rusage& ru) {
    WorkerUsage u = usage_from_rusage(ru);
    auto it = tracked_.find(pid);
    if (it == tracked_.end()) return u;
    const Tracked t = std::move(it->second);
    tracked_.erase(it);
    if (t.memory) {  // its own memory cgroup: the peak of it and its descendants, its OOM kills
        if (auto peak = memory_peak(*t.memory)) {
            u.peak_bytes = *peak;  // what its limit counts (not shared file pages, as RSS does)
            u.peak_from_cgroup = true;
        }
        u.oom_kills = static_cast<int>(memory_oom_kills(*t.memory));
        if (u.oom_kills > 0 && exit.signal == SIGKILL) {
            u.oom_killed = true;
            u.limit = MemoryLimit{memory_limit(*t.memory),
                                  "its memory cgroup (--memory-limit-per-worker)"};
        }
        if (memory_) memory_->remove(*t.memory);  // kept while its descendants live on
    }
    if (exit.signal != SIGKILL || u.oom_killed) return u;
    // SIGKILLed: the kernel's record says whether its OOM killer did it, read only when the
    // node's count of OOM kills moved since the attempt's workers were spawned.
    const auto now = node_oom_kill_count();
    if (!now || !node_ooms_at_start_ || *now <= *node_ooms_at_start_) return u;
    bool readable = false;
    // Its clock and the kernel's log differ by a little on some machines: a second of slack.
    const std::uint64_t since = t.started_us > 1'000'000 ? t.started_us - 1'000'000 : 0;
    if (auto kill = find_oom_kill(pid, since, &readable)) {
        u.oom_killed = true;
        u.oom_kills = std::max(u.oom_kills, 1);
        u.limit = limit_of(*kill, t.memory);
    } else if (!readable) {
        u.node_oom_kills_meanwhile = *now - *node_ooms_at_start_;
    }
    return u;
}

std::optional<MemoryLimit> ProcessLauncher::limit_of(const OomKill& kill,
                                                     const std::optional<MemoryCgroup>& own) {
    if (kill.constraint == "CONSTRAINT_NONE")
        return MemoryLimit{node_memory_bytes(), "the node's memory"};
    if (kill.constraint == "CONSTRAINT_CPUSET" || kill.constraint == "CONSTRAINT_MEMORY_POLICY") {
        return MemoryLimit{std::nullopt, "the memory of its NUMA nodes (cpuset or memory policy)"};
    }
    if (kill.constraint != "CONSTRAINT_MEMCG" || kill.oom_memcg.empty()) return std::nullopt;
    std::optional<std::uint64_t> bytes;
    if (auto at = memory_cgroup_at(kill.oom_memcg)) bytes = memory_limit(*at);
    if (own && own->path == kill.oom_memcg) {
        return MemoryLimit{bytes, "its memory cgroup (--memory-limit-per-worker)"};
    }
    const auto job = own_memory_cgroup();  // ptrun's: the job's, or one above it
    const bool jobs =
        job && (job->path == kill.oom_memcg || job->path.rfind(kill.oom_memcg + "/", 0) == 0 ||
                kill.oom_memcg == "/");
    return MemoryLimit{bytes,
                       (jobs ? "the job's memory cgroup " : "memory cgroup ") + kill.oom_memcg};
}

void ProcessLauncher::begin_attempt() {
    reset_signals_ = signals_to_reset();  // once for the attempt's workers, not per worker
    attempt_.clear();
    alive_.clear();
    for (const auto& [pid, t] : tracked_) {  // never reaped as workers: ended with their attempt
        if (t.memory && memory_) memory_->remove(*t.memory);
    }
    tracked_.clear();
    node_ooms_at_start_.reset();  // none until attempt_spawned(): SIGKILLs say no more
    containment_->attempt_started();
}

void ProcessLauncher::attempt_spawned() { node_ooms_at_start_ = node_oom_kill_count(); }

pid_t ProcessLauncher::launch(SpawnRequest& request) {
    request.env[kJobTagVariable] = containment_->worker_tag(inherited_tag_);
    int cgroup_errno = 0;
    request.cgroup_dir_fd = containment_->cgroup_dir_fd();
    request.cgroup_procs_fd = -1;  // spawn_worker opens it where clone3 cannot place the child
    request.cgroup_errno = &cgroup_errno;
    request.reset_signals = reset_signals_ ? &*reset_signals_ : nullptr;
    request.sched_attributes = slice_ ? slice_->original() : nullptr;
    Tracked tracked;
    tracked.started_us = kmsg_now_us();
    sys::Fd memory_procs;
    if (memory_) {
        MemoryCgroup cgroup;
        int fd = -1;
        std::string error;
        if (!memory_->add(&cgroup, &fd, &error)) {
            throw EnvironmentError("--memory-limit-per-worker: " + error);
        }
        memory_procs = sys::Fd(fd);
        tracked.memory = cgroup;
        request.memory_procs_fd = fd;
        if (cgroup.version == 2) {  // one v2 cgroup per process: its memory cgroup, not the job's
            request.cgroup_dir_fd = -1;
            request.cgroup_procs_fd = -1;
        }
    }
    pid_t pid = -1;
    try {
        pid = spawn_worker(request);
    } catch (...) {
        request.cgroup_errno = nullptr;
        request.memory_procs_fd = -1;
        request.reset_signals = nullptr;
        request.sched_attributes = nullptr;
        if (tracked.memory) memory_->remove(*tracked.memory);
        throw;
    }
    request.cgroup_errno = nullptr;
    request.memory_procs_fd = -1;
    request.reset_signals = nullptr;
    request.sched_attributes = nullptr;
    tracked_[pid] = std::move(tracked);
    attempt_.insert(pid);
    alive_.insert(pid);
    if (cgroup_errno != 0) containment_->cgroup_join_failed(cgroup_errno);
    return pid;
}

std::uint64_t ProcessLauncher::fork_worker(ForkServer& server, SpawnRequest& request,
                                           std::function<void(pid_t)> started) {
    if (memory_) {
        // A forked worker would run, and allocate, before it could be moved into its memory
        // cgroup: with per-worker limits every worker is exec'd (joining it before exec).
        if (!zygote_refusal_said_) {
            log_->info(
                "--memory-limit-per-worker: workers are exec'd, not forked from the --preload "
                "zygote (a forked worker would start outside its memory cgroup)");
        }
        zygote_refusal_said_ = true;
        return 0;
    }
    request.env[kJobTagVariable] = containment_->worker_tag(inherited_tag_);
    request.cgroup_procs_fd = containment_->cgroup_procs_fd();
    return server.fork_worker(
        request, [this, started = std::move(started)](pid_t pid, int cgroup_errno) {
            if (pid > 0) {  // an attempt's end cancels its requests: this is the current one
                tracked_[pid] = Tracked{kmsg_now_us(), std::nullopt};
                attempt_.insert(pid);
                alive_.insert(pid);
                if (cgroup_errno != 0) containment_->cgroup_join_failed(cgroup_errno);
            }
            started(pid);
        });
}

pid_t ProcessLauncher::launch_helper(SpawnRequest& request,
                                     std::function<void(const WorkerExit&)> exited) {
    request.env[kJobTagVariable] = containment_->worker_tag(inherited_tag_);
    request.cgroup_dir_fd = containment_->helper_cgroup_dir_fd();
    request.sched_attributes = slice_ ? slice_->original() : nullptr;
    const pid_t pid = spawn_worker(request);
    helpers_[pid] = std::move(exited);
    return pid;
}

std::vector<pid_t> ProcessLauncher::helper_pids() const {
    std::vector<pid_t> out;
    for (const auto& [pid, exited] : helpers_) out.push_back(pid);
    return out;
}

LiveUsage ProcessLauncher::usage_now(pid_t pid) const {
    LiveUsage u = read_process_usage(pid);
    auto it = tracked_.find(pid);
    if (it != tracked_.end() && it->second.memory) return with_cgroup_usage(u, *it->second.memory);
    return u;
}

void ProcessLauncher::signal_group(pid_t pgid, int signo) { launcher::signal_group(pgid, signo); }

void ProcessLauncher::end_attempt() {
    for (pid_t pid : attempt_) launcher::signal_group(pid, SIGKILL);
    if (memory_) memory_->kill_workers();  // v2: the workers' cgroups are not the job's
    if (containment_) containment_->attempt_ended(helper_pids());  // cgroup, children inherited
    alive_.clear();
}

void ProcessLauncher::note_temp_dir(const std::string& path) { containment_->note_temp_dir(path); }

}  // namespace ptrun::launcher
