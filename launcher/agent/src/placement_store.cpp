#include "ptrun/launcher/agent/placement_store.hpp"

#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

AgentStore open_workers_store(const LaunchConfig& config, const FixedPlacement& placement,
                              std::shared_ptr<spdlog::logger> logger) {
    if (placement.hosts_store) {
        return start_agent_store(config, std::move(logger));
    }
    AgentStore remote;
    remote.endpoint =
        StoreEndpoint{config.master_addr, config.master_port.value_or(0), true, {}, {}};
    return remote;
}

}  // namespace ptrun::launcher
