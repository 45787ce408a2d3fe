#include "ptrun/launcher/agent/agent_store.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_listener.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

/// The agent store's server: made at once, or from a listening socket at start(). Its calls
/// come from the agent's thread.
class AgentStoreServer {
  public:
    /// A server that serves at once.
    explicit AgentStoreServer(rdzv::TcpStoreServerOptions options)
        : server_(std::make_unique<rdzv::TcpStoreServer>(std::move(options))) {}
    /// A server made at start() on `listener` (a listening socket it then owns).
    AgentStoreServer(rdzv::TcpStoreServerOptions options, sys::Fd listener)
        : options_(std::move(options)), listener_(std::move(listener)) {}

    /// The server, made on the listening socket if it was not yet, with its thread started.
    /// Throws std::system_error when the thread cannot start, rdzv::StoreError otherwise.
    void start() {
        if (!server_) {
            options_.adopt_fd = listener_.release();  // the server owns and closes it
            options_.start_thread = false;
            server_ = std::make_unique<rdzv::TcpStoreServer>(std::move(options_));
        }
        server_->start();
    }
    /// Wipes every key (nothing to wipe before the server exists: nobody was served).
    void clear() {
        if (server_) server_->clear();
    }
    /// Connections, keys and bytes now (all 0 before the server exists).
    watchdog::StoreNumbers numbers() {
        return server_ ? store_numbers(*server_) : watchdog::StoreNumbers{};
    }
    std::uint16_t port() const {
        return server_ ? server_->port() : rdzv::bound_port(listener_.get());
    }
    int listening_fd() const { return server_ ? server_->listening_fd() : listener_.get(); }

  private:
    rdzv::TcpStoreServerOptions options_;
    sys::Fd listener_;
    std::unique_ptr<rdzv::TcpStoreServer> server_;
};

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
    AgentStore store;
    if (at_first_connection) {
        std::string error;
        sys::Fd listener(rdzv::listen_tcp(options.host, options.port, error));
        if (!listener) {
            throw rdzv::StoreError(rdzv::listen_failure(options.host, options.port, error));
        }
        store.server = std::make_shared<AgentStoreServer>(std::move(options), std::move(listener));
    } else {
        store.server = std::make_shared<AgentStoreServer>(std::move(options));
    }
    const auto server = store.server;
    store.endpoint = StoreEndpoint{.host = config.master_addr,
                                   .port = server->port(),
                                   .agent_hosted = true,
                                   .reset = [server] { server->clear(); },
                                   .stats = [server] { return server->numbers(); }};
    if (at_first_connection) {
        store.endpoint.listening_fd = server->listening_fd();
        store.endpoint.start = [server] { server->start(); };
    }
    return store;
}

}  // namespace ptrun::launcher
