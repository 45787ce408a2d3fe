#pragma once
/// StackCapture: the native stacks of several processes (a node's local ranks), through the
/// stack tool, on the agent's io_context: a few tools run at once, each bounded in time and
/// output (BoundedCommand), and one completion reports every pid. Attaching stops each process
/// for the tool's duration only; the process goes on afterwards (or stays hung) as before.
///
/// Use (launcher/src/agent_watchdog.cpp): when judge_hangs() finds a hang, before anything is
/// signalled, the agent starts one StackCapture over every live local rank (if find_stack_tool()
/// found a tool), then sends the Python ranks send_traceback_signal(), then stops the group as for
/// any failure; the report joins both through summarise_stacks().

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ptrun/watchdog/bounded_command.hpp"
#include "ptrun/watchdog/stack_tool.hpp"
#include "ptrun/watchdog/stacks.hpp"

namespace ptrun::watchdog {

/// One process's native stacks.
struct NativeStacks {
    pid_t pid = 0;
    std::vector<ThreadStack> threads;  ///< parsed; empty when the tool failed
    std::string text;                  ///< the tool's output as printed
    std::string note;                  ///< "" or what went wrong ("gdb timed out after 10 s")
};

class StackCapture : public std::enable_shared_from_this<StackCapture> {
  public:
    using Done = std::function<void(std::vector<NativeStacks>)>;

    /// Starts capturing `pids` with `tool`, at most `parallel` (>= 1) tools at once, each under
    /// `limits`; `done` gets one entry per pid, in the order given, on `io`'s thread.
    static std::shared_ptr<StackCapture> start(boost::asio::io_context& io, StackTool tool,
                                               std::vector<pid_t> pids, CommandLimits limits,
                                               int parallel, Done done);
    /// Kills the tools still running; `done` still runs once, with notes for what was cut.
    void cancel();

  private:
    StackCapture(boost::asio::io_context& io, StackTool tool, CommandLimits limits, Done done)
        : io_(io), tool_(std::move(tool)), limits_(limits), done_(std::move(done)) {}
    void launch_next();
    void finished(std::size_t index, CommandOutcome outcome);

    boost::asio::io_context& io_;
    StackTool tool_;
    CommandLimits limits_;
    Done done_;
    std::vector<NativeStacks> results_;
    std::vector<std::shared_ptr<BoundedCommand>> running_;
    std::size_t next_ = 0;
    std::size_t pending_ = 0;
    bool cancelled_ = false;
};

}  // namespace ptrun::watchdog
