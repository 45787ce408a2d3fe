#pragma once
/// Tells the person at a multi-node job what its rendezvous waits for: at the first wait, the
/// exact command another node needs; then progress, on one updating line on a terminal, a line a
/// minute otherwise; once MIN nodes joined, how long the last call still admits more.

#include <chrono>
#include <memory>
#include <string>

#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

class ConsoleLogSink;

class WaitProgress {
  public:
    /// Draws on `logger`'s ConsoleLogSink when it has one on a terminal, else logs lines.
    WaitProgress(const LaunchConfig& config, std::shared_ptr<spdlog::logger> logger);

    /// One report from the join thread (RdzvSessionOptions::on_waiting).
    void update(const JoinProgress& progress);
    /// How often the session should report: every second on a terminal, 5 s otherwise.
    std::chrono::milliseconds interval() const;

  private:
    std::string waiting_text(const JoinProgress& progress);

    const LaunchConfig& config_;
    std::shared_ptr<spdlog::logger> log_;
    std::shared_ptr<ConsoleLogSink> console_;
    bool first_ = true;
    bool last_call_said_ = false;
    std::chrono::seconds last_line_{-1};        ///< when the last progress line was logged
    std::chrono::seconds last_call_since_{-1};  ///< when MIN was first seen reached
};

/// The command line another node runs to join this job: ptrun with this job's --nnodes (MIN:MAX),
/// --nproc-per-node, --max-restarts, the store (with etcd: every member) as --rdzv-endpoint, the
/// backend unless static, --rdzv-id, the whole --rdzv-conf, and the program with its arguments
/// (shell-quoted where needed).
std::string join_command(const LaunchConfig& config);

/// An address of this machine other machines can reach (--local-addr, else the first up,
/// non-loopback interface address), "" when there is none.
std::string reachable_address(const LaunchConfig& config);

}  // namespace ptrun::launcher
