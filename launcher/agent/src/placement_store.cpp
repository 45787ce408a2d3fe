#include "ptrun/launcher/agent/placement_store.hpp"

#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

AgentStore open_workers_store(const LaunchConfig& config, const FixedPlacement& placement,
                              std::shared_ptr<spdlog::logger> logger) {
    if (placement.hosts_store) {
        // Every rank's task reaches it, and it outlives this task's agent (the exit barrier):
        // it serves at once, not at the agent's first connection.
        return start_agent_store(config, std::move(logger), /*at_first_connection=*/false);
    }
    AgentStore remote;
    remote.endpoint = StoreEndpoint{
        .host = config.master_addr, .port = config.master_port.value_or(0), .agent_hosted = true};
    return remote;
}

}  // namespace ptrun::launcher
