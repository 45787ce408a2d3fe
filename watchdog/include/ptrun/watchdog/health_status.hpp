#pragma once
/// What the health endpoint answers, as pure functions of a status snapshot the agent provides:
/// GET /health -> health_of() (200 "ok" or 503 with the reason), GET /status -> status_json().

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::watchdog {

enum class WorkerState {
    Starting,   ///< running, not beaten yet (start-up)
    Running,    ///< running and making progress (or not judged: no --hang-timeout)
    Stopped,    ///< stopped by a signal (SIGSTOP, SIGTTIN, ...)
    Hung,       ///< judged hung (hang_detector.hpp)
    Succeeded,  ///< exited 0
    Failed,     ///< exited non-zero, or died by a signal
};

/// Every state, in the order above.
inline constexpr std::array kWorkerStates{WorkerState::Starting,  WorkerState::Running,
                                          WorkerState::Stopped,   WorkerState::Hung,
                                          WorkerState::Succeeded, WorkerState::Failed};

/// "starting", "running", "stopped", "hung", "succeeded", "failed".
const char* state_name(WorkerState state);
/// The state state_name() calls `name`; nullopt for any other text.
std::optional<WorkerState> state_named(std::string_view name);

struct WorkerStatus {
    int local_rank = 0;
    int rank = 0;
    pid_t pid = 0;
    WorkerState state = WorkerState::Starting;
    std::uint64_t progress_count = 0;
    std::optional<double> seconds_since_progress;  ///< nullopt: never made progress
    std::optional<std::string> section;            ///< the announced section, if any
    std::string
        detail;  ///< why it is not healthy, in words ("exit code 1", "no progress for 62 s")
    /// What its rank used on this node so far, restarts included (the end table's figures):
    /// memory resident now (nullopt unless it runs and is readable), the largest peak of its
    /// runs, CPU seconds (user + system) summed over them, and OOM kills counted over them.
    std::optional<std::uint64_t> memory_bytes = std::nullopt;
    std::optional<std::uint64_t> peak_memory_bytes = std::nullopt;
    std::optional<double> cpu_seconds = std::nullopt;
    std::uint64_t oom_kills = 0;
};

/// The workers' store where this node hosts it (/metrics).
struct StoreNumbers {
    std::uint64_t connections = 0;
    std::uint64_t keys = 0;
    std::uint64_t stored_bytes = 0;
};

/// Another node's status as its agent last published it, on the store host of a multi-node
/// job (node_status.hpp reads it).
struct NodeStatus {
    std::string host;
    int node_rank = 0;
    std::string health_endpoint;  ///< where its health endpoint is reached; "" when unknown
    std::string phase;
    double age_seconds = 0;  ///< since the store host received it
    std::string last_failure;
    /// Its workers; seconds_since_progress already counts the report's age.
    std::vector<WorkerStatus> workers;
};

/// The agent's view at one moment.
struct StatusSnapshot {
    std::string run_id;
    std::string host;   ///< this node's host name
    int node_rank = 0;  ///< this node's group rank
    /// "ADDR:PORT" other hosts reach this node's health endpoint at ("" when unknown).
    std::string health_endpoint;
    std::uint64_t round = 0;  ///< rendezvous round (0 on a single node)
    int restart_count = 0;    ///< restarts used: group restarts and replacements
    /// --restart-policy failed: the running generation (0 until a worker is replaced).
    int generation = 0;
    std::string phase = "running";  ///< "rendezvous", "running", "recovering", "stopping", ...
    double uptime_seconds = 0;      ///< since ptrun started
    int world_size = 0;             ///< workers in the job (every node)
    int nodes = 1;                  ///< nodes in the job's current round
    std::string log_dir;            ///< the run's directory, "" while it has none
    /// The last worker failure of the run in words, with its UTC time; "" when none.
    std::string last_failure;
    std::uint64_t hangs = 0;            ///< hangs declared in this run
    std::optional<StoreNumbers> store;  ///< on the node hosting the workers' store
    std::vector<WorkerStatus> workers;
    /// The latest attempt that got its ready line (every rank made its first progress): that
    /// line, and the seconds of each of its start-up phases in order ("spawn", ...); -1: none.
    int ready_attempt = -1;
    std::string ready_line;
    double ready_seconds = 0;
    std::vector<std::pair<std::string, double>> startup_phases;
    /// On the store host of a multi-node job: the other nodes of the current round that
    /// published their status (each agent does with --health-port), by node rank.
    std::vector<NodeStatus> other_nodes;
    /// On the store host of a multi-node job: the host names of the nodes waiting as spares.
    std::vector<std::string> spares;
};

struct Health {
    bool ok = true;
    std::string reason;  ///< "ok", or the first unhealthy worker in words
};

/// Healthy while every worker is starting, running or succeeded (no workers at all, e.g. during
/// a rendezvous, is healthy); otherwise the first stopped, hung or failed worker by local rank.
/// This node's workers only (GET /health).
Health health_of(const StatusSnapshot& snapshot);
/// health_of() over every worker the snapshot knows: this node's, then the other nodes' (each
/// reason then names the worker's host); the job's health on the store host.
Health job_health_of(const StatusSnapshot& snapshot);

/// {"run_id", "host", "node_rank", "health_endpoint" (null: unknown), "round", "restart_count",
/// "generation", "phase", "healthy", "reason" (job_health_of), "uptime_seconds", "world_size",
/// "nodes", "log_dir" (null: none), "last_failure" (null: none), "hangs", "ready": null, or
/// {"attempt", "line", "seconds", "phases": [["spawn", s], ...] in order}, "spares": [host, ...],
/// "node_states": [{"host", "node_rank", "health_endpoint", "phase", "age_seconds", "workers" (a
/// count), "healthy", "reason", "last_failure"}] (this node first, then other_nodes), "workers":
/// [{"host", "node_rank", "local_rank", "rank", "pid", "state", "progress_count",
/// "seconds_since_progress" (null: never), "section" (null: none), "detail", "memory_bytes",
/// "peak_memory_bytes", "cpu_seconds" (each null: unknown), "oom_kills"}] (every node's, by rank)};
/// one line, valid UTF-8 (invalid bytes replaced).
std::string status_json(const StatusSnapshot& snapshot);

/// The snapshot in Prometheus's text exposition format (version 0.0.4): ptrun_info, uptime,
/// this node's workers by state and every known node's (ptrun_job_workers), world size, nodes,
/// round, restarts, hangs, this node's health and the job's, per rank (every known node's, with
/// its host) its progress count, seconds since its last progress, memory now, peak memory, CPU
/// seconds and OOM kills (ptrun_worker_memory_bytes, ..._peak_memory_bytes,
/// ..._cpu_seconds_total, ..._oom_kills_total), each other node's report age, the latest ready
/// attempt's start-up phase durations (ptrun_startup_seconds, ptrun_startup_phase_seconds{phase}),
/// and where this node hosts the workers' store its connections, keys and bytes.
std::string metrics_text(const StatusSnapshot& snapshot);

}  // namespace ptrun::watchdog
