#pragma once
/// `ptrun --explain`: the resolved launch and where each value came from.

#include <string>

#include "ptrun/launcher/launch_config.hpp"
#include "ptrun/launcher/launch_options.hpp"

namespace ptrun::launcher {

/// A human-readable table of the resolved topology with each value's source.
std::string explain(const LaunchConfig& config, const LaunchOptions& options);

/// The table's row saying which containment (containment.hpp) ptrun would use on this machine
/// for ptrun's environment `env`; probes the machine, creates nothing.
std::string explain_containment_row(const env::EnvMap& env);

}  // namespace ptrun::launcher
