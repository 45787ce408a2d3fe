#pragma once
/// What each worker used, in words: sizes ("21.4 GiB"), the OOM verdict of a failure report, and
/// the table printed at the end of every run, one per node, consecutive identical ranks merged
/// ("ranks 1-3") as --explain merges them.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/process/exit_status.hpp"
#include "ptrun/launcher/process/worker_usage.hpp"

namespace ptrun::launcher {

/// "512 B", "200 MiB", "21.4 GiB": binary units, at most one decimal.
std::string bytes_text(std::uint64_t bytes);

/// "24 GiB, the node's memory": a memory limit and whose it is (the OOM report's and --explain's).
std::string limit_text(const MemoryLimit& limit);

/// "killed by the kernel's OOM killer (peak 21.4 GiB; limit 24 GiB, the node's memory)" for a
/// worker the OOM killer ended; "" otherwise.
std::string oom_text(const WorkerUsage& usage);

/// How a worker ended: describe(exit), or for an OOM kill "signal 9 (SIGKILL): killed by the
/// kernel's OOM killer (...), exit code 137"; a SIGKILL while the node's OOM killer was busy and
/// its log unreadable says that, as a likely cause.
std::string exit_text(const WorkerExit& exit, const WorkerUsage& usage);

/// The end table's "ended" cell: "exit code 0", "SIGSEGV", "OOM-killed (SIGKILL)", with
/// ", stopped by ptrun" when ptrun ended it after another's failure or a signal.
std::string ended_cell(const WorkerExit& exit, const WorkerUsage& usage, bool stopped_by_ptrun);

/// One rank's row of the end table: over every attempt it ran in on this node.
struct RankUse {
    int rank = 0;
    std::chrono::duration<double> wall{0};    ///< summed over its runs
    std::optional<double> cpu_seconds;        ///< summed; nullopt when never reaped
    std::optional<std::uint64_t> peak_bytes;  ///< the largest of its runs
    bool peak_from_cgroup = false;
    int restarts = 0;   ///< runs after its first
    std::string ended;  ///< how its last run ended
    int oom_kills = 0;  ///< summed over its runs (WorkerUsage::oom_kills)
};

/// The end table of node `host`: a header line, then one line per rank (or run of identical
/// consecutive ranks), then what "peak" measured.
std::string format_usage_table(const std::string& host, const std::vector<RankUse>& ranks);

}  // namespace ptrun::launcher
