#pragma once
/// Real child processes for unit tests: started with posix_spawn, output captured through a
/// pipe, every wait bounded by a deadline (poll on the pipe and a pidfd, never a sleep), and
/// killed and reaped by the destructor so that no test leaves one behind.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::test {

/// How a finished child ended.
struct ChildResult {
    int exit_code = -1;  ///< -1 when killed by a signal
    int signal = 0;      ///< the signal that ended it, 0 for an exit
    std::string output;  ///< stdout and stderr interleaved (at most 1 MiB kept)
};

/// One running child. stdout and stderr go to one pipe the test reads; stdin is /dev/null.
class ChildProcess {
  public:
    /// Starts argv[0] (searched in PATH) with the environment plus `env` (which overrides).
    /// Throws std::runtime_error when it cannot be started.
    ChildProcess(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env = {});
    /// SIGKILLs the child if it still runs, and reaps it.
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }
    /// Reads output until it contains `text`; false when the deadline passes or the child closed
    /// its output first.
    bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout);
    /// Waits for the child to end (reading its output); nullopt when the deadline passes.
    std::optional<ChildResult> wait(std::chrono::milliseconds timeout);
    /// The output read so far.
    const std::string& output() const { return output_; }

  private:
    /// Reads what is available within `until`; false when the pipe reached EOF.
    bool pump(std::chrono::steady_clock::time_point until);

    pid_t pid_ = -1;
    int out_fd_ = -1;
    int pidfd_ = -1;
    bool reaped_ = false;
    std::string output_;
};

/// Runs argv to its end (at most `timeout`, then SIGKILL) and returns how it ended; throws
/// std::runtime_error on a timeout, naming the command and its output so far.
ChildResult run_child(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace ptrun::test
