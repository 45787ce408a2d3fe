#pragma once
/// The complete launch `main` runs: the validated configuration with what SLURM and the
/// environment add to it.

#include <optional>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/fixed_placement.hpp"
#include "ptrun/launcher/launch_config.hpp"
#include "ptrun/launcher/launch_options.hpp"

namespace ptrun::launcher {

/// resolve(opts, host) plus `placement` (SLURM per-rank mode) and PTRUN_STRAGGLER_NOTICE from
/// `env`; throws UsageError as resolve does, and naming the variable for a bad notice.
LaunchConfig resolve_launch(const LaunchOptions& opts, std::optional<FixedPlacement> placement,
                            const HostFacts& host, const env::EnvMap& env);

}  // namespace ptrun::launcher
