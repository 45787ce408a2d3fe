#include "ptrun/launcher/process/spawn.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "clone3.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/sys/c_array.hpp"
#include "ptrun/sys/fd.hpp"
#include "ptrun/watchdog/stack_tool.hpp"

namespace ptrun::launcher {
namespace {

/// Everything the child needs, prepared by the parent before clone().
struct ChildArgs {
    const SpawnRequest* request;
    char* const* argv;
    char* const* envp;
    pid_t parent;
    sigset_t parent_mask;
    sigset_t reset;        ///< the signals the child sets to SIG_DFL
    int exec_errno = 0;    ///< written by the child (shared memory) when exec fails
    int cgroup_errno = 0;  ///< written by the child when joining the cgroup fails
    int memory_errno = 0;  ///< written by the child when joining its memory cgroup fails
    placement::BindingOutcome binding;  ///< written by the child when binding fails
    int join_procs_fd = -1;  ///< not created in the cgroup: the child joins it through this
};

/// Closes every descriptor from `first` up: the worker gets 0-2 and what ptrun passes on purpose,
/// never what ptrun's caller left open (an inherited pipe end would keep its reader waiting), as
/// torchrun's subprocess does. The child has its own descriptor table (no CLONE_FILES).
void close_inherited(unsigned first) {
    if (::close_range(first, ~0U, 0) == 0) return;
    rlimit limit{};  // close_range is Linux 5.9: before it, one close per possible descriptor
    const rlim_t end = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 1024;
    for (rlim_t fd = first; fd < end && fd < (1u << 20); ++fd) ::close(static_cast<int>(fd));
}

/// Runs in the child, sharing ptrun's memory until exec (CLONE_VM | CLONE_VFORK, as posix_spawn
/// does): raw system calls only, nothing that allocates or touches shared state.
int exec_child(void* raw) {
    auto* a = static_cast<ChildArgs*>(raw);
    const SpawnRequest& r = *a->request;
    // ptrun's own handlers (the event loop's signal pipe) must never run in the child: the set
    // the parent took (signals_to_reset), one call per signal in it.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < 32; ++sig) {
        if (sigismember(&a->reset, sig) == 1) ::sigaction(sig, &dfl, nullptr);
    }
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != a->parent) ::_exit(127);  // ptrun died before prctl took effect
    if (r.allow_stack_capture) ptrun::watchdog::allow_stack_capture_by_parent();
    if (a->join_procs_fd >= 0 && ::write(a->join_procs_fd, "0", 1) != 1) a->cgroup_errno = errno;
    if (r.memory_procs_fd >= 0 && ::write(r.memory_procs_fd, "0", 1) != 1) {
        a->memory_errno = errno;  // its limit would not apply: it does not start
        ::_exit(127);
    }
    if (r.binding) {
        a->binding = placement::apply_binding(*r.binding);
        if (a->binding.failed != placement::BindingStep::None) ::_exit(127);
    }
    if (r.sched_attributes) set_thread_sched_attributes(*r.sched_attributes);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (r.stdout_fd >= 0) ::dup2(r.stdout_fd, STDOUT_FILENO);
    if (r.stderr_fd >= 0) ::dup2(r.stderr_fd, STDERR_FILENO);
    // The descriptors passed on purpose go to 3 and 4: first above them, so that placing one
    // never overwrites the other's source.
    constexpr int kAbove = kEventsChildFd + 1;
    int control = r.control_fd, events = r.events_fd;
    if (control >= 0 && control < kAbove) control = ::fcntl(control, F_DUPFD, kAbove);
    if (events >= 0 && events < kAbove) events = ::fcntl(events, F_DUPFD, kAbove);
    if (control >= 0)
        ::dup2(control, 3);
    else
        ::close(3);
    if (events >= 0)
        ::dup2(events, kEventsChildFd);
    else
        ::close(kEventsChildFd);
    close_inherited(kAbove);
    ::execve(r.exec_path.c_str(), a->argv, a->envp);
    a->exec_errno = errno;
    ::_exit(127);
}

}  // namespace

sigset_t signals_to_reset() {
    sigset_t out;
    sigemptyset(&out);
    for (int sig = 1; sig < 32; ++sig) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL && (old.sa_handler != SIG_IGN || sig == SIGPIPE)) {
            sigaddset(&out, sig);
        }
    }
    return out;
}

pid_t spawn_worker(const SpawnRequest& r) {
    auto argv = sys::c_array(r.argv);
    auto env = sys::env_block(r.env);

    ChildArgs child{&r, argv.data(), env.pointers.data(), ::getpid(), {}, {}, 0, 0, 0, {}, -1};
    child.reset = r.reset_signals ? *r.reset_signals : signals_to_reset();
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &child.parent_mask);
    constexpr std::size_t kStack = 64 * 1024;
    // On this thread's stack: the child touches only its top pages. (A thread_local array would be
    // 64 KiB of TLS that the loader clears for every thread ptrun starts.)
    alignas(16) char stack[kStack];
    long created = -ENOSYS;
    if (r.cgroup_dir_fd >= 0) {
        created = clone_vfork_into_cgroup(r.cgroup_dir_fd, stack, kStack, exec_child, &child);
    }
    pid_t pid = static_cast<pid_t>(created);
    int clone_errno = created < 0 ? static_cast<int>(-created) : 0;
    sys::Fd opened_procs;  // the cgroup's cgroup.procs, opened here when the caller gave none
    if (created < 0) {     // no cgroup, or clone3 / CLONE_INTO_CGROUP unsupported or refused
        child.join_procs_fd = r.cgroup_procs_fd;
        if (child.join_procs_fd < 0 && r.cgroup_dir_fd >= 0) {
            opened_procs = sys::Fd(::openat(r.cgroup_dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
            if (opened_procs.get() < 0 && r.cgroup_errno) *r.cgroup_errno = errno;
            child.join_procs_fd = opened_procs.get();
        }
        pid = ::clone(exec_child, stack + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
        clone_errno = errno;
    }
    ::pthread_sigmask(SIG_SETMASK, &child.parent_mask, nullptr);
#if defined(__SANITIZE_ADDRESS__)
    // The child's frames poisoned parts of `stack` in the shadow memory it shared; this frame's
    // later callees reuse that stack and would meet the stale poison (false reports).
    __asan_unpoison_memory_region(stack, kStack);
#endif
    if (pid < 0 && (clone_errno == EAGAIN || clone_errno == ENOMEM)) {
        // The machine refused a process: not this worker's failure, and no restart can help.
        throw EnvironmentError(errno_message("cannot start a worker", clone_errno));
    }
    if (pid < 0) throw SpawnError(std::string("clone: ") + std::strerror(clone_errno));
    // The worker's group exists: the child made it (setpgid(0, 0)) before its exec, and vfork
    // resumes ptrun only after the exec (or the child's end).
    if (child.cgroup_errno != 0 && r.cgroup_errno) *r.cgroup_errno = child.cgroup_errno;
    if (child.memory_errno != 0) {
        throw SpawnError(
            "cannot put the worker in its memory cgroup (--memory-limit-per-worker): " +
            std::string(std::strerror(child.memory_errno)));
    }
    if (child.binding.failed != placement::BindingStep::None) {
        const bool cpus = child.binding.failed == placement::BindingStep::Affinity;
        throw SpawnError(std::string("cannot bind the worker (--numa-binding): ") +
                         (cpus ? "sched_setaffinity" : "set_mempolicy") + ": " +
                         std::strerror(child.binding.error));
    }
    if (child.exec_errno != 0) {
        throw SpawnError("cannot execute '" + r.exec_path +
                         "': " + std::strerror(child.exec_errno));
    }
    return pid;
}

void signal_group(pid_t pgid, int signo) {
    if (pgid > 0) ::kill(-pgid, signo);
}

}  // namespace ptrun::launcher
