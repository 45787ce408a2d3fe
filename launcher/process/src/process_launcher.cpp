#include "ptrun/launcher/process/process_launcher.hpp"

#include <sys/wait.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <vector>

#include "ptrun/launcher/process/fork_server.hpp"
#include "ptrun/launcher/process/process_sweep.hpp"

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
    sigchld_.reset();      // before the loop it was made on goes
    containment_.reset();  // ends what is left
}

void ProcessLauncher::open(boost::asio::io_context& io, ChangeHandler changed) {
    changed_ = std::move(changed);
    // Also cleans what SIGKILLed ptruns left (main made ptrun a subreaper).
    containment_ = std::make_unique<Containment>(options_, log_);
    sigchld_ = std::make_unique<Sigchld>(io);
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
    // WUNTRACED: a worker stopped (on the terminal, by SIGSTOP) is said at once, never waited on;
    // WCONTINUED: one continued by someone else (kill -CONT) is no longer stopped.
    while (open_ && (pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
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
            alive_.erase(pid);
        }
        changed_(change);
    }
    if (!open_) return;
    auto spared = helper_pids();  // and the attempt's live workers: orphans of attempts over
    spared.insert(spared.end(), alive_.begin(), alive_.end());
    containment_->children_reaped(spared);
}

void ProcessLauncher::begin_attempt() {
    attempt_.clear();
    alive_.clear();
    containment_->attempt_started();
}

pid_t ProcessLauncher::launch(SpawnRequest& request) {
    request.env[kJobTagVariable] = containment_->worker_tag(inherited_tag_);
    int cgroup_errno = 0;
    request.cgroup_dir_fd = containment_->cgroup_dir_fd();
    request.cgroup_procs_fd = containment_->cgroup_procs_fd();
    request.cgroup_errno = &cgroup_errno;
    const pid_t pid = spawn_worker(request);
    request.cgroup_errno = nullptr;
    attempt_.insert(pid);
    alive_.insert(pid);
    if (cgroup_errno != 0) containment_->cgroup_join_failed(cgroup_errno);
    return pid;
}

std::uint64_t ProcessLauncher::fork_worker(ForkServer& server, SpawnRequest& request,
                                           std::function<void(pid_t)> started) {
    request.env[kJobTagVariable] = containment_->worker_tag(inherited_tag_);
    request.cgroup_procs_fd = containment_->cgroup_procs_fd();
    return server.fork_worker(
        request, [this, started = std::move(started)](pid_t pid, int cgroup_errno) {
            if (pid > 0) {  // an attempt's end cancels its requests: this is the current one
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
    const pid_t pid = spawn_worker(request);
    helpers_[pid] = std::move(exited);
    return pid;
}

std::vector<pid_t> ProcessLauncher::helper_pids() const {
    std::vector<pid_t> out;
    for (const auto& [pid, exited] : helpers_) out.push_back(pid);
    return out;
}

void ProcessLauncher::signal_group(pid_t pgid, int signo) { launcher::signal_group(pgid, signo); }

void ProcessLauncher::end_attempt() {
    for (pid_t pid : attempt_) launcher::signal_group(pid, SIGKILL);
    if (containment_) containment_->attempt_ended(helper_pids());  // cgroup, children inherited
    alive_.clear();
}

void ProcessLauncher::note_temp_dir(const std::string& path) { containment_->note_temp_dir(path); }

}  // namespace ptrun::launcher
