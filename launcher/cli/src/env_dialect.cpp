#include "env_dialect.hpp"

#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/slurm/variable_read.hpp"
#include "ptrun/slurm/variables.hpp"

namespace ptrun::launcher::detail {
namespace {

EnvDialect slurm_dialect(const env::EnvMap& env) {
    const std::string step = slurm::first_set(env, {slurm::var::kStepId, slurm::var::kStepIdOld});
    EnvDialect d;
    d.source = Source::Slurm;
    d.off_hint = " (or pass --slurm-mode off to ignore SLURM)";
    d.quote_values = true;
    d.own_mode = true;
    d.nproc_makes_agents = false;
    d.counts_tasks_only = true;
    d.c10d_agents = true;
    d.port_var = kSlurmPortVar;
    d.batch_why = "batch script outside srun: one ptrun";
    d.batch_here = "batch script outside srun: this node only";
    d.batch_script = "batch script itself (" + step + " unset)";
    d.start_per_node = "srun ptrun ...";
    d.batch_runs_once = "the batch script runs once, outside any srun step (" + step +
                        " unset); start one ptrun per rank with 'srun ptrun ...'";
    d.per_node_hint = " (srun --ntasks-per-node=1)";
    d.restart_hint =
        "one rank cannot restart alone; use one task per node for restarts, or requeue";
    return d;
}

}  // namespace

EnvDialect dialect_for(schedulers::LauncherKind kind, const env::EnvMap& env) {
    if (kind == schedulers::LauncherKind::Slurm) return slurm_dialect(env);
    const std::string title(schedulers::launcher_kind_title(kind));
    EnvDialect d;
    d.off_hint = " (or pass --launcher-env off to ignore " + title + ")";
    d.batch_here = "the job script: this node only";
    d.batch_script = title + " job script itself";
    // Only PBS runs ptrun in a job script (Topology::batch_script); its tasks come from pbsdsh.
    d.start_per_node = kind == schedulers::LauncherKind::Pbs ? "pbsdsh -u ptrun ..." : "ptrun ...";
    d.batch_runs_once =
        "the " + title + " job script runs once; start one ptrun per rank with its launcher";
    d.restart_hint = "one rank cannot restart alone; start one task per node for restarts";
    return d;
}

}  // namespace ptrun::launcher::detail
