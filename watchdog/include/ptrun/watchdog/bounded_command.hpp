#pragma once
/// BoundedCommand: a helper program (a stack tool) run as a child on the agent's io_context
/// without ever blocking it: its output is read as it comes and kept up to a size, it is killed
/// at a deadline, and its end is watched through a pidfd. The completion handler runs exactly
/// once, on the io_context's thread.
///
/// The agent reaps every child with waitpid(-1) as the job's subreaper; if it reaps this one
/// first, exit_code is unknown, which changes nothing: the output is what matters. The child is
/// signalled only through its pidfd, so a pid reused after such a reap is never hit.

#include <sys/types.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::watchdog {

struct CommandLimits {
    std::chrono::milliseconds timeout{std::chrono::seconds(10)};
    std::size_t max_output = 1 << 20;  ///< bytes kept; the rest is read and dropped
};

struct CommandOutcome {
    std::string output{};            ///< stdout and stderr interleaved, at most max_output bytes
    bool truncated = false;          ///< more output was dropped
    bool timed_out = false;          ///< killed at the deadline
    bool cancelled = false;          ///< killed by cancel()
    std::optional<int> exit_code{};  ///< nullopt: killed, or reaped by someone else first
    std::string error{};             ///< non-empty: it could not be started (and why)
};

class BoundedCommand : public std::enable_shared_from_this<BoundedCommand> {
  public:
    using Done = std::function<void(CommandOutcome)>;

    /// Starts argv[0] (an absolute path) with exactly `env` ("NAME=value" strings), stdin from
    /// /dev/null, in a process group of its own; `done` gets the outcome. A start failure is
    /// reported through `done` too (posted, never called from inside start).
    static std::shared_ptr<BoundedCommand> start(boost::asio::io_context& io,
                                                 std::vector<std::string> argv,
                                                 std::vector<std::string> env, CommandLimits limits,
                                                 Done done);
    /// Kills the child now (if it runs); `done` still runs once, with cancelled set.
    void cancel();
    /// The child's pid (0 when it could not be started).
    pid_t pid() const { return pid_; }
    /// Kills a child still running (a destroyed io_context takes its handlers, and this, along).
    ~BoundedCommand();
    BoundedCommand(const BoundedCommand&) = delete;
    BoundedCommand& operator=(const BoundedCommand&) = delete;

  private:
    struct Io;
    BoundedCommand(boost::asio::io_context& io, CommandLimits limits, Done done);
    void launch(std::vector<std::string> argv, std::vector<std::string> env);
    void read_output();
    void watch_exit();
    void kill_child();
    void maybe_finish();

    std::unique_ptr<Io> io_;
    CommandLimits limits_;
    Done done_;
    CommandOutcome outcome_;
    pid_t pid_ = 0;
    bool output_closed_ = false;
    bool exited_ = false;
    bool finished_ = false;
};

}  // namespace ptrun::watchdog
