#include "worker_store_relay.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

WorkerStoreRelay::WorkerStoreRelay(std::shared_ptr<spdlog::logger> logger)
    : log_(std::move(logger)) {}

WorkerStoreRelay::~WorkerStoreRelay() = default;

RelayedStore WorkerStoreRelay::endpoint_for(const std::string& host, std::uint16_t port) {
    if (server_ && host == host_ && port == port_) return {"127.0.0.1", server_->port()};
    server_.reset();
    rdzv::TcpStoreServerOptions options;
    options.host = "127.0.0.1";  // the node's own workers only
    options.relay.host = host;
    options.relay.port = port;
    options.logger = log_;
    try {
        server_ = std::make_unique<rdzv::TcpStoreServer>(options);
    } catch (const rdzv::StoreError& e) {
        log_->warn("--store-relay: {}; this node's workers connect to the store directly",
                   e.what());
        return {host, port};
    }
    host_ = host;
    port_ = port;
    log_->info("--store-relay: this node's workers reach the store at {}:{} through 127.0.0.1:{}",
               host, port, server_->port());
    return {"127.0.0.1", server_->port()};
}

}  // namespace ptrun::launcher
