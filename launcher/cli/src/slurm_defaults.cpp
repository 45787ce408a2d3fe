#include "ptrun/launcher/cli/slurm_defaults.hpp"

#include <utility>

#include "environment_defaults.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/schedulers/reader.hpp"
#include "ptrun/slurm/variables.hpp"

namespace ptrun::launcher {

SlurmDefaults apply_slurm_defaults(LaunchOptions options, const env::EnvMap& env) {
    namespace var = slurm::var;
    SlurmDefaults out;
    out.options = std::move(options);
    auto& o = out.options;
    const SlurmMode mode = parse_slurm_mode(o.at(Option::SlurmMode));
    if (mode == SlurmMode::Off) return out;
    if (env.find(var::kJobId) == env.end()) {
        record_slurm_mode(o, SlurmMode::Off, "SLURM_JOB_ID unset: not inside SLURM");
        return out;
    }
    if (env.find(var::kProcId) == env.end() && env.find(var::kNodeId) == env.end()) {
        record_slurm_mode(o, SlurmMode::Off,
                          "SLURM_JOB_ID set but no SLURM_PROCID: not a SLURM task");
        out.warnings.push_back(
            "SLURM_JOB_ID is set but this is not a SLURM task (no SLURM_PROCID, as in "
            "salloc's shell on a login node): nothing inferred from SLURM; run 'srun ptrun ...' "
            "to start ptrun on the allocated nodes");
        return out;
    }
    // SLURM names no host file: the reader reads the environment only.
    auto filled = detail::fill_from_environment(
        std::move(o), env, schedulers::reader_for(schedulers::LauncherKind::Slurm), {});
    out.options = std::move(filled.options);
    out.placement = std::move(filled.placement);
    return out;
}

}  // namespace ptrun::launcher
