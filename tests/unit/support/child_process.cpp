#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace ptrun::test {
namespace {

constexpr std::size_t kMaxOutput = 1 << 20;

std::vector<char*> c_array(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

int remaining_ms(std::chrono::steady_clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env) {
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string kv = *e;
        const auto eq = kv.find('=');
        if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) merged[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
    std::vector<std::string> args = argv;
    auto c_argv = c_array(args);
    auto c_env = c_array(env_strings);

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    const int rc = ::posix_spawnp(&pid_, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        throw std::runtime_error("cannot start '" + argv[0] + "': " + std::strerror(rc));
    }
    out_fd_ = fds[0];
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

ChildProcess::~ChildProcess() {
    if (!reaped_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
    if (pidfd_ >= 0) ::close(pidfd_);
}

bool ChildProcess::pump(std::chrono::steady_clock::time_point until) {
    if (out_fd_ < 0) return false;
    pollfd p{out_fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, remaining_ms(until));
    if (n <= 0) return true;
    char buf[4096];
    const ssize_t got = ::read(out_fd_, buf, sizeof buf);
    if (got <= 0) {
        if (got < 0 && errno == EINTR) return true;
        ::close(out_fd_);
        out_fd_ = -1;
        return false;
    }
    if (output_.size() < kMaxOutput) output_.append(buf, static_cast<std::size_t>(got));
    return true;
}

bool ChildProcess::wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (output_.find(text) == std::string::npos) {
        if (std::chrono::steady_clock::now() >= until) return false;
        if (!pump(until)) return output_.find(text) != std::string::npos;
    }
    return true;
}

std::optional<ChildResult> ChildProcess::wait(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    // Output first (the child closes it when it ends), then the exit through the pidfd.
    while (out_fd_ >= 0) {
        if (std::chrono::steady_clock::now() >= until) return std::nullopt;
        pump(until);
    }
    if (pidfd_ >= 0) {
        pollfd p{pidfd_, POLLIN, 0};
        if (::poll(&p, 1, remaining_ms(until)) <= 0) return std::nullopt;
    }
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    reaped_ = true;
    ChildResult r;
    r.output = output_;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    return r;
}

ChildResult run_child(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env,
                      std::chrono::milliseconds timeout) {
    ChildProcess child(argv, env);
    auto result = child.wait(timeout);
    if (!result) {
        throw std::runtime_error("'" + argv[0] + "' still running after " +
                                 std::to_string(timeout.count()) +
                                 " ms; output: " + child.output());
    }
    return *result;
}

}  // namespace ptrun::test
