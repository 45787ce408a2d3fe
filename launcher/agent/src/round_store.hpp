#pragma once
/// The workers' store a node hosts for the round it joins (etcd backend, where no node hosts
/// the rendezvous): a fresh server on a fresh port for each join, so that no key or connection
/// of an earlier round reaches the next. The round's group rank 0 serves its workers.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ptrun/watchdog/health_status.hpp"

namespace spdlog {
class logger;
}
namespace ptrun::rdzv {
class TcpStoreServer;
}

namespace ptrun::launcher {

class RoundStore {
  public:
    /// Serves nothing until renew(); `address` is where it will listen (this node's address).
    RoundStore(std::string address, std::shared_ptr<spdlog::logger> logger);
    ~RoundStore();
    RoundStore(const RoundStore&) = delete;
    RoundStore& operator=(const RoundStore&) = delete;

    /// Closes the last round's server (its connections with it) and starts an empty one on an
    /// ephemeral port; returns that port. Throws rdzv::StoreError when it cannot listen.
    std::uint16_t renew();
    /// The current server's numbers (zeros before the first renew()).
    watchdog::StoreNumbers stats();

  private:
    std::string address_;
    std::shared_ptr<spdlog::logger> logger_;
    std::mutex mu_;
    std::unique_ptr<rdzv::TcpStoreServer> server_;
};

}  // namespace ptrun::launcher
