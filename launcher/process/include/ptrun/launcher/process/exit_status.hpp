#pragma once
/// How a worker ended, and what ptrun's own exit code becomes.

#include <string>

namespace ptrun::launcher {

/// A worker's end: a normal exit with `code`, or death by `signal` (code is then 0).
struct WorkerExit {
    int code = 0;
    int signal = 0;
    /// True for exit code 0 without a signal.
    bool succeeded() const { return code == 0 && signal == 0; }
    /// The shell convention: the exit code, or 128 + signal for a signal death.
    int shell_code() const { return signal ? 128 + signal : code; }
    bool operator==(const WorkerExit&) const = default;
};

/// Decodes a waitpid() status.
WorkerExit from_wait_status(int status);

/// "SIGKILL" for 9, "SIG42" for an unnamed number.
std::string signal_name(int signo);

/// The signal number for "SIGTERM", "TERM" or "15"; 0 when unknown.
int signal_number(const std::string& name);

/// "exit code 3", or "signal 9 (SIGKILL)" plus a hint where a signal has a common cause.
std::string describe(const WorkerExit& exit);

}  // namespace ptrun::launcher
