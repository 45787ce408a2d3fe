#pragma once
/// The store ptrun hosts in-process for its workers (TORCHELASTIC_USE_AGENT_STORE=True): bound
/// once at start and held until exit, so there is no free-port race.

#include <memory>

#include "ptrun/launcher/agent/agent.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::rdzv {
class TcpStoreServer;
}

namespace ptrun::launcher {

class AgentStoreServer;  // the server, made at once or at the first connection (agent_store.cpp)

/// A running agent store and the endpoint workers use to reach it.
struct AgentStore {
    std::shared_ptr<AgentStoreServer> server;  ///< shared with the endpoint's calls
    StoreEndpoint endpoint;                    ///< its reset() wipes the store between attempts
    AgentStore();
    AgentStore(AgentStore&&) noexcept;
    ~AgentStore();
};

/// Starts the store on --master-port (or the c10d endpoint's port, else an ephemeral one). It
/// listens on loopback only when MASTER_ADDR is a loopback name or address (always with
/// --standalone), else on every interface. `at_first_connection`: only the listening socket is
/// made now; the server (its event loop, epoll sets and thread) when the agent sees the first
/// connection (StoreEndpoint::start), so that workers that never connect cost none of it; else
/// the server serves at once. Throws rdzv::StoreError naming host and port.
AgentStore start_agent_store(const LaunchConfig& config, std::shared_ptr<spdlog::logger> logger,
                             bool at_first_connection = true);

/// The store's connections, keys and bytes now, for /metrics (waits for its thread's answer).
watchdog::StoreNumbers store_numbers(rdzv::TcpStoreServer& server);

/// The address the store binds for `master_addr`: loopback stays loopback.
std::string store_bind_address(const std::string& master_addr, bool standalone);

}  // namespace ptrun::launcher
