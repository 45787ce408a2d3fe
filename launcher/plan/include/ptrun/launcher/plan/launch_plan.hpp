#pragma once
/// The complete launch `main` runs: one of three modes, each holding the validated configuration
/// (with what SLURM and the environment add to it) and only what its mode needs beyond it.

#include <optional>
#include <string>
#include <variant>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// One node: this ptrun hosts the workers' store and decides restarts itself.
struct SingleNodeLaunch {
    LaunchConfig config;
};

/// Several nodes: the agents meet at `config.rendezvous_store`, and each round places the workers.
struct ElasticLaunch {
    LaunchConfig config;
    std::string random_id;  ///< HostFacts::random_id: makes this agent's rendezvous id unique
};

/// SLURM one task per rank: one worker the scheduler placed, no rendezvous, no restarts; the
/// store host waits for every rank at the end (placement_exit.hpp).
struct PerRankLaunch {
    LaunchConfig config;       ///< its store is at master_addr:master_port
    FixedPlacement placement;  ///< the one worker's place in the job, as SLURM gave it
};

using LaunchPlan = std::variant<SingleNodeLaunch, ElasticLaunch, PerRankLaunch>;

/// resolve(opts, host) plus PTRUN_STRAGGLER_NOTICE and PTRUN_READY_DEADLINE from `env`; throws
/// UsageError as resolve does, and naming the variable for a bad notice.
LaunchConfig resolve_launch(const LaunchOptions& opts, const HostFacts& host,
                            const env::EnvMap& env);

/// resolve_launch's configuration in its mode: per-rank when `placement` (SLURM one task per rank)
/// is set, elastic when the job may span several nodes, single node otherwise. Throws as
/// resolve_launch does, and UsageError for a placement option per-rank mode cannot honour
/// (--numa-binding, --virtual-local-rank).
LaunchPlan make_launch_plan(const LaunchOptions& opts, std::optional<FixedPlacement> placement,
                            const HostFacts& host, const env::EnvMap& env);

/// The configuration `plan` holds, whatever its mode.
const LaunchConfig& config_of(const LaunchPlan& plan);

}  // namespace ptrun::launcher
