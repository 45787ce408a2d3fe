#pragma once
/// The local agent: starts the worker group, watches it on one event loop (child exits, signals,
/// the grace timer; nothing polls), restarts it while restarts remain, and reports failures.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/membership/membership.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/launcher/plan/local_placement.hpp"
#include "ptrun/launcher/plan/worker_command.hpp"
#include "ptrun/launcher/process/worker_launcher.hpp"
#include "ptrun/watchdog/health_status.hpp"

namespace spdlog {
class logger;
}

#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {

/// Where the workers find their store (MASTER_ADDR / MASTER_PORT).
struct StoreEndpoint {
    std::string host{};
    std::uint16_t port = 0;
    bool agent_hosted = false;  ///< TORCHELASTIC_USE_AGENT_STORE
    /// Called before every attempt after the first, once the previous attempt's workers are gone:
    /// gives the next attempt a fresh store namespace (torch 2.5+ workers no longer prefix keys).
    std::function<void()> reset{};
    /// Where this node hosts the store: its connections, keys and bytes now (/metrics); empty
    /// elsewhere. Blocks for the store thread's answer.
    std::function<watchdog::StoreNumbers()> stats{};
    /// Where this node hosts a store whose thread starts at its first connection (workers that
    /// never connect, e.g. a no-op, cost no thread): its listening socket, which the agent
    /// watches, and the call that starts it. -1 / empty: the store serves already.
    int listening_fd = -1;
    std::function<void()> start{};
};

struct Console;

class Agent {
  public:
    /// `local`: each local worker's devices and binding (plan_local_placement). `parent_env` is
    /// ptrun's own environment, inherited by every worker. `membership` is null
    /// for a single-node job. `console` is ptrun's stdout/stderr (shared with the logger); null:
    /// the agent makes its own. `launcher` starts, signals and reaps the workers; null: a
    /// ProcessLauncher (clone3 into the job's cgroup, SIGCHLD reaping, containment).
    Agent(const LaunchConfig& config, WorkerCommand command, LocalPlacement local,
          env::EnvMap parent_env, StoreEndpoint store, std::shared_ptr<spdlog::logger> logger,
          std::optional<Membership> membership = std::nullopt,
          std::shared_ptr<Console> console = nullptr,
          std::unique_ptr<WorkerLauncher> launcher = nullptr);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    /// The --health-port's socket, already listening (EarlyHealth::hand_over): run() serves it
    /// instead of opening the port. Before run().
    void serve_health_on(sys::Fd listener);

    /// `pipe` (stdin) is the launching ptrun's (`--from-launcher`, host_fleet.hpp): when it reads
    /// end-of-file or hangs up, the launcher is gone and the job stops as on SIGTERM; the job's
    /// failure summary is then left to the failing node's report. Before run().
    void watch_launcher_pipe(sys::Fd pipe);

    /// Runs the job to its end and returns ptrun's exit code: 0 when every worker succeeded, the
    /// first failing worker's code (128+signal for a signal death), or 128+signal when ptrun was
    /// stopped by a signal. Blocks. Must be called from the main thread.
    int run();

    /// After run(): true when the job ended on --checkpoint-signal (its workers are all gone).
    bool checkpointed() const;
    /// After run(), when checkpointed(): when the workers were sent the checkpoint signal.
    std::chrono::steady_clock::time_point checkpoint_started() const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
