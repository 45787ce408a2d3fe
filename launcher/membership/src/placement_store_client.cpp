#include "ptrun/launcher/membership/placement_store_client.hpp"

namespace ptrun::launcher {

std::unique_ptr<rdzv::TcpStoreClient> placement_store_client(
    const LaunchConfig& config, const FixedPlacement& placement,
    std::chrono::milliseconds connect_timeout, std::chrono::milliseconds io_timeout) {
    rdzv::TcpStoreClientOptions options;
    options.host = placement.hosts_store ? "127.0.0.1" : config.master_addr;
    options.port = config.master_port.value_or(0);
    options.connect_timeout = connect_timeout;
    if (io_timeout > std::chrono::milliseconds::zero()) options.io_timeout = io_timeout;
    return std::make_unique<rdzv::TcpStoreClient>(options);
}

}  // namespace ptrun::launcher
