#include "ptrun/launcher/process/slurm_requeue.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "ptrun/launcher/process/exit_status.hpp"

extern char** environ;

namespace ptrun::launcher {
std::optional<RequeueTarget> requeue_target(const env::EnvMap& env) {
    const auto job = env::lookup(env, "SLURM_JOB_ID");
    if (!job || job->empty()) return std::nullopt;
    const auto procid = env::lookup(env, "SLURM_PROCID");
    const auto nodeid = env::lookup(env, "SLURM_NODEID");
    const bool leader = procid ? *procid == "0" : nodeid.value_or("0") == "0";
    return RequeueTarget{*job, leader};
}

std::string requeue_slurm_job(const std::string& job_id, std::chrono::milliseconds deadline) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return std::string("cannot make a pipe: ") + strerror(errno);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
    std::vector<std::string> words{"scontrol", "requeue", job_id};
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int err = ::posix_spawnp(&pid, "scontrol", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (err != 0) {
        ::close(out[0]);
        return std::string("cannot run scontrol: ") + strerror(err);
    }
    // The child's exit closes the pipe: wait for that, bounded (the pipe's end is the event).
    pollfd p{out[0], POLLIN, 0};
    std::string text;
    const auto until = std::chrono::steady_clock::now() + deadline;
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            timed_out = ready == 0;
            break;
        }
        char buf[512];
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n <= 0) break;  // end of file: scontrol is done
        if (text.size() < 4096) text.append(buf, static_cast<std::size_t>(n));
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    ::close(out[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        return "scontrol requeue " + job_id + " did not answer within " +
               std::to_string(deadline.count() / 1000) + " s";
    }
    const auto exit = from_wait_status(status);
    if (exit.succeeded()) return "";
    return "scontrol requeue " + job_id + " failed (" + describe(exit) + ")" +
           (text.empty() ? "" : ": " + text);
}

}  // namespace ptrun::launcher
