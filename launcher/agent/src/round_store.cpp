#include "round_store.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/launcher/agent/agent_store.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {

RoundStore::RoundStore(std::string address, std::shared_ptr<spdlog::logger> logger)
    : address_(std::move(address)), logger_(std::move(logger)) {}

RoundStore::~RoundStore() = default;

std::uint16_t RoundStore::renew() {
    std::unique_ptr<rdzv::TcpStoreServer> old;
    std::lock_guard lock(mu_);
    old = std::move(server_);
    old.reset();  // the last round's workers are gone; their stray connections go with it
    rdzv::TcpStoreServerOptions options;
    options.host = address_;
    options.port = 0;
    options.logger = logger_->clone("store");
    options.logger->set_level(spdlog::level::warn);
    server_ = std::make_unique<rdzv::TcpStoreServer>(std::move(options));
    return server_->port();
}

watchdog::StoreNumbers RoundStore::stats() {
    std::lock_guard lock(mu_);
    return server_ ? store_numbers(*server_) : watchdog::StoreNumbers{};
}

}  // namespace ptrun::launcher
