#include "ptrun/launcher/spawn.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace ptrun::launcher {
namespace {

/// A NULL-terminated char* array over strings that outlive it.
std::vector<char*> c_array(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

/// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const SpawnRequest& r, char* const* argv, char* const* envp, pid_t parent,
                             int report_fd) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // ptrun died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (r.stdout_fd >= 0) ::dup2(r.stdout_fd, STDOUT_FILENO);
    if (r.stderr_fd >= 0) ::dup2(r.stderr_fd, STDERR_FILENO);
    ::execve(r.exec_path.c_str(), argv, envp);
    int err = errno;
    [[maybe_unused]] auto n = ::write(report_fd, &err, sizeof err);
    ::_exit(127);
}

}  // namespace

pid_t spawn_worker(const SpawnRequest& r) {
    std::vector<std::string> args = r.argv;
    std::vector<std::string> env_strings;
    env_strings.reserve(r.env.size());
    for (const auto& [k, v] : r.env) env_strings.push_back(k + "=" + v);
    auto argv = c_array(args);
    auto envp = c_array(env_strings);

    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) throw SpawnError(std::string("pipe2: ") + std::strerror(errno));
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        int err = errno;
        ::close(report[0]);
        ::close(report[1]);
        throw SpawnError(std::string("fork: ") + std::strerror(err));
    }
    if (pid == 0) exec_child(r, argv.data(), envp.data(), parent, report[1]);
    ::close(report[1]);
    ::setpgid(pid, pid);  // also from the parent, so the group exists before we ever signal it
    int child_errno = 0;
    ssize_t n;
    do {
        n = ::read(report[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
        throw SpawnError("cannot execute '" + r.exec_path + "': " + std::strerror(child_errno));
    }
    return pid;
}

void signal_group(pid_t pgid, int signo) {
    if (pgid > 0) ::kill(-pgid, signo);
}

}  // namespace ptrun::launcher
