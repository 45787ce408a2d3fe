#pragma once
/// `ptrun --explain`: the resolved launch and where each value came from.

#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/launcher/plan/worker_command.hpp"

namespace ptrun::launcher {

/// One row of the table: what, its value, and where that came from.
struct ExplainRow {
    std::string what;
    std::string value;
    std::string from;
};

/// A human-readable table of the resolved topology with each value's source, in aligned columns
/// as wide as their longest entry. `interpreter`: the Python interpreter the workers would run
/// with (find_interpreter), nullopt when they are not Python; `extra` rows go last. `fixed`: the
/// one worker's placement with one task per rank (PerRankLaunch: SLURM, MPI, ...), else null.
std::string explain(const LaunchConfig& config, const FixedPlacement* fixed,
                    const LaunchOptions& options,
                    const std::optional<Interpreter>& interpreter = std::nullopt,
                    const std::vector<ExplainRow>& extra = {});

/// The rows saying how each worker is started: the Python runner (when the program runs through
/// Python) and the exact argv, shell-quoted (or why it cannot start: a missing program).
/// `per_rank`: one task per rank (PerRankLaunch), where --preload is not used.
std::vector<ExplainRow> explain_worker_command(const LaunchConfig& config,
                                               const LaunchOptions& options, const env::EnvMap& env,
                                               const Installation& installation,
                                               bool per_rank = false);

/// The table's row saying which containment (containment.hpp) ptrun would use on this machine
/// for ptrun's environment `env`; probes the machine, creates nothing.
ExplainRow explain_containment_row(const env::EnvMap& env);

/// The table's row naming the memory limit that applies to the workers: with
/// --memory-limit-per-worker each one's own memory cgroup and its limit (or why none can be made
/// here); otherwise the job's memory cgroup's limit, else the node's memory (as the OOM report
/// names them). Probes the machine, creates nothing.
ExplainRow explain_memory_limit_row(const LaunchConfig& config, const LaunchOptions& options);

}  // namespace ptrun::launcher
