#include "ptrun/launcher/cli/launcher_env.hpp"

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {

LauncherEnvChoice parse_launcher_env(const RawValue& raw) {
    LauncherEnvChoice choice;
    if (raw.value == "auto") return choice;
    if (raw.value == "off") {
        choice.mode = LauncherEnvChoice::Mode::Off;
        return choice;
    }
    if (auto kind = schedulers::parse_launcher_kind(raw.value)) {
        choice.mode = LauncherEnvChoice::Mode::Forced;
        choice.kind = *kind;
        return choice;
    }
    throw UsageError(as_given(Option::LauncherEnv, raw) +
                     ": expected auto, slurm, mpi, flux, pbs, lsf, k8s or off");
}

}  // namespace ptrun::launcher
