#pragma once
/// The one path from a launch environment to the options (private to cli/): a reader's
/// Topology, filled in the environment's dialect (env_dialect.hpp). apply_slurm_defaults and
/// apply_launcher_env both end here.

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/launcher_env_defaults.hpp"
#include "ptrun/schedulers/reader.hpp"

namespace ptrun::launcher::detail {

/// Fills the options of `options` still at their default from the topology `reader` reads in
/// `env` (and the host file it names, through `read_host_file`), in one-task-per-rank mode or
/// one-agent-per-node mode (launcher_env_defaults.hpp says which values); records the mode in
/// "slurm-mode". Pure but for `read_host_file`. Throws UsageError naming the variable and its
/// value for a malformed or contradicting one, or naming an explicit option the mode cannot honour.
LaunchDefaults fill_from_environment(LaunchOptions options, const env::EnvMap& env,
                                     const schedulers::Reader& reader,
                                     const ReadHostFile& read_host_file);

}  // namespace ptrun::launcher::detail
