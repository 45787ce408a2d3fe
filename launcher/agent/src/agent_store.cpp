#include "ptrun/launcher/agent/agent_store.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

AgentStore::AgentStore() = default;
AgentStore::AgentStore(AgentStore&&) noexcept = default;
AgentStore::~AgentStore() = default;

std::string store_bind_address(const std::string& master_addr, bool standalone) {
    if (standalone || master_addr == "localhost" || master_addr.rfind("127.", 0) == 0)
        return "127.0.0.1";
    if (master_addr == "::1") return "::1";
    return "0.0.0.0";
}

watchdog::StoreNumbers store_numbers(rdzv::TcpStoreServer& server) {
    const auto stats = server.stats();
    return {stats.connections, stats.keys, stats.stored_bytes};
}

AgentStore start_agent_store(const LaunchConfig& config, std::shared_ptr<spdlog::logger> logger,
                             bool at_first_connection) {
    rdzv::TcpStoreServerOptions options;
    options.host = store_bind_address(config.master_addr, config.standalone);
    options.port = config.master_port.value_or(0);
    if (logger) {
        options.logger =
            logger->clone("store");  // its routine lines (listening, stopped) stay quiet
        options.logger->set_level(spdlog::level::warn);
    }
    options.start_thread = !at_first_connection;
    AgentStore store;
    store.server = std::make_unique<rdzv::TcpStoreServer>(std::move(options));
    auto* server = store.server.get();
    store.endpoint = StoreEndpoint{config.master_addr,
                                   server->port(),
                                   true,
                                   [server] { server->clear(); },
                                   [server] { return store_numbers(*server); },
                                   -1,
                                   {}};
    if (at_first_connection) {
        store.endpoint.listening_fd = server->listening_fd();
        store.endpoint.start = [server] { server->start(); };
    }
    return store;
}

}  // namespace ptrun::launcher
