#pragma once
/// One task per rank (mpirun, srun without ptrun's own nodes): each rank's ptrun sees only its own
/// worker, so a rank that failed because another did (`Connection closed by peer`) would report
/// itself as the root cause too. The job has one: the first ptrun whose worker failed claims it in
/// the workers' store, and the others point to it.

#include <chrono>
#include <string>

#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// Claims the job's root cause with `mine` (this worker's failure line) under the run's key in
/// the workers' store (the placement's host). Returns the line another ptrun claimed first, or ""
/// when this one's stands, or when the store did not answer within `timeout` (each rank then
/// reports its own, as without a store). Never throws.
std::string claim_root_cause(const LaunchConfig& config, const FixedPlacement& placement,
                             const std::string& mine,
                             std::chrono::milliseconds timeout = std::chrono::seconds(2));

}  // namespace ptrun::launcher
