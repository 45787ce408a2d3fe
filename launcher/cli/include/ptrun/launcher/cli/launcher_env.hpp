#pragma once
/// --launcher-env: which launch environment ptrun reads its defaults from.

#include <optional>

#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"

namespace ptrun::launcher {

/// Auto: detect (schedulers/reader.hpp's order). Off: read none. Forced: read `kind` only.
struct LauncherEnvChoice {
    enum class Mode { Auto, Off, Forced } mode = Mode::Auto;
    schedulers::LauncherKind kind = schedulers::LauncherKind::Slurm;  ///< Forced only
};

/// The choice --launcher-env's `raw` value names: auto, off, or one of slurm, mpi, flux, pbs,
/// lsf, k8s. Throws UsageError naming the value and the accepted ones for anything else.
LauncherEnvChoice parse_launcher_env(const RawValue& raw);

}  // namespace ptrun::launcher
