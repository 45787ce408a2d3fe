#include "ptrun/launcher/process/exit_status.hpp"

#include <sys/wait.h>

#include <utility>
#include <array>
#include <csignal>
#include <cstring>

#include "ptrun/env/env_map.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::array<std::pair<int, const char*>, 26> kSignals{{
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
    {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},     {SIGTSTP, "SIGTSTP"}, {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGSYS, "SIGSYS"},   {SIGTTIN, "SIGTTIN"},
    {SIGTTOU, "SIGTTOU"}, {SIGWINCH, "SIGWINCH"},
}};

}  // namespace

WorkerExit from_wait_status(int status) {
    if (WIFSIGNALED(status)) return {0, WTERMSIG(status)};
    if (WIFEXITED(status)) return {WEXITSTATUS(status), 0};
    return {1, 0};
}

std::string signal_name(int signo) {
    for (const auto& [n, name] : kSignals) {
        if (n == signo) return name;
    }
    return "SIG" + std::to_string(signo);
}

int signal_number(const std::string& name) {
    if (auto n = env::parse_int(name)) return (*n > 0 && *n < 65) ? static_cast<int>(*n) : 0;
    std::string full = name.rfind("SIG", 0) == 0 ? name : "SIG" + name;
    for (const auto& [n, known] : kSignals) {
        if (full == known) return n;
    }
    return 0;
}

std::string describe(const WorkerExit& exit) {
    if (!exit.signal) return "exit code " + std::to_string(exit.code);
    std::string text =
        "signal " + std::to_string(exit.signal) + " (" + signal_name(exit.signal) + ")";
    if (exit.signal == SIGKILL) {
        text +=
            "; the OOM killer or a memory limit (cgroup, SLURM --mem) is a common cause of SIGKILL";
    } else if (exit.signal == SIGSEGV || exit.signal == SIGBUS) {
        text += "; a crash in native code";
    }
    return text;
}

}  // namespace ptrun::launcher
