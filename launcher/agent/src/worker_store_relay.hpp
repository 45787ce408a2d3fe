#pragma once
/// WorkerStoreRelay: --store-relay's per-node store. The node's workers connect to it (on
/// 127.0.0.1) and it forwards their requests to the workers' store over a few connections, so
/// that the store host holds a handful of connections per node instead of one per rank.

#include <spdlog/fwd.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ptrun::rdzv {
class TcpStoreServer;
}

namespace ptrun::launcher {

struct RelayedStore {
    std::string host;
    std::uint16_t port = 0;
};

class WorkerStoreRelay {
  public:
    explicit WorkerStoreRelay(std::shared_ptr<spdlog::logger> logger);
    ~WorkerStoreRelay();
    WorkerStoreRelay(const WorkerStoreRelay&) = delete;
    WorkerStoreRelay& operator=(const WorkerStoreRelay&) = delete;

    /// Where the workers connect to reach the store at `host`:`port`: this node's relay to it
    /// (started, or restarted when the store moved), or the store itself, with a warning, when
    /// the relay cannot reach it.
    RelayedStore endpoint_for(const std::string& host, std::uint16_t port);

  private:
    std::shared_ptr<spdlog::logger> log_;
    std::unique_ptr<rdzv::TcpStoreServer> server_;
    std::string host_;
    std::uint16_t port_ = 0;
};

}  // namespace ptrun::launcher
