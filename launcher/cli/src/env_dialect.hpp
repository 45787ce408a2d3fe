#pragma once
/// How ptrun fills the options from one launch environment's Topology and speaks of it: the few
/// places where SLURM's rules (--slurm-mode, srun, PTRUN_SLURM_PORT, c10d at the head host) and
/// the PBS job script differ from the rest. Values, no behaviour: environment_defaults.cpp is the
/// one path that reads them. Private to cli/.

#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"

namespace ptrun::launcher::detail {

struct EnvDialect {
    Source source = Source::LauncherEnv;  ///< what every filled value is tagged with
    /// Appended to a reader's error: " (or pass --launcher-env off to ignore MPI)".
    std::string off_hint;
    /// Values in reasons as set, "SLURM_NTASKS='4'", rather than parsed, "FLUX_JOB_SIZE=4".
    bool quote_values = false;
    /// --slurm-mode is this environment's own: it records the mode used (per-node, per-rank),
    /// where the others leave it "off" with the mode's reason.
    bool own_mode = false;
    /// Auto mode: an explicit --nproc-per-node above 1 makes every task an agent.
    bool nproc_makes_agents = true;
    /// Per-node mode names the task count alone ("SLURM_NTASKS='2': one task per node") rather
    /// than tasks = nodes.
    bool counts_tasks_only = false;
    /// Agents meet by c10d at the head host:port (--rdzv-backend/--rdzv-endpoint filled, even on
    /// one node), rather than by static rendezvous at the master address on several nodes.
    bool c10d_agents = false;
    std::string port_var;         ///< ptrun's variable that replaces the derived port, or ""
    std::string batch_why;        ///< the mode's reason in the job script, or "" (the tasks' then)
    std::string batch_here;       ///< where nnodes 1 and node rank 0 come from in the job script
    std::string batch_script;     ///< "batch script itself (SLURM_STEP_ID unset)"
    std::string start_per_node;   ///< how to start one ptrun per node: "srun ptrun ..."
    std::string batch_runs_once;  ///< why the job script cannot run one task per rank
    std::string per_node_hint;    ///< how to start one task per node: " (srun --ntasks-per-node=1)"
    std::string restart_hint;     ///< what to do instead of restarts in per-rank mode
};

/// The dialect of `kind` (SLURM's names its step variable as `env` spells it).
EnvDialect dialect_for(schedulers::LauncherKind kind, const env::EnvMap& env);

}  // namespace ptrun::launcher::detail
