#pragma once
/// Which agent hosts the workers' store: this one, except in one-task-per-rank mode, where only
/// the task the FixedPlacement names starts it and every other task only points its worker there.

#include <memory>

#include "ptrun/launcher/agent/agent_store.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// start_agent_store(config), serving at once, when `placement` hosts the store, else an AgentStore
/// with no server whose endpoint is master_addr:master_port (agent-hosted, no reset: per-rank mode
/// never restarts). Throws rdzv::StoreError when the store cannot bind.
AgentStore open_workers_store(const LaunchConfig& config, const FixedPlacement& placement,
                              std::shared_ptr<spdlog::logger> logger);

}  // namespace ptrun::launcher
