#pragma once
/// `ptrun --explain`: the resolved launch and where each value came from.

#include <string>

#include "ptrun/launcher/launch_config.hpp"
#include "ptrun/launcher/launch_options.hpp"

namespace ptrun::launcher {

/// A human-readable table of the resolved topology with each value's source.
std::string explain(const LaunchConfig& config, const LaunchOptions& options);

}  // namespace ptrun::launcher
