#include "ptrun/launcher/membership/root_cause_claim.hpp"

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {

std::string claim_root_cause(const LaunchConfig& config, const FixedPlacement& placement,
                             const std::string& mine, std::chrono::milliseconds timeout) {
    if (!config.master_port || placement.world_size < 2 || mine.empty()) return "";
    rdzv::TcpStoreClientOptions options;
    options.host = placement.hosts_store ? "127.0.0.1" : config.master_addr;
    options.port = *config.master_port;
    options.connect_timeout = options.io_timeout = timeout;
    try {
        rdzv::TcpStoreClient client(options);
        // compare_set stores `mine` only where nothing is, and answers what is stored then.
        const auto first =
            client.compare_set("ptrun/exit/" + config.run_id + "/root_cause", "", mine);
        return first == mine ? "" : first;
    } catch (const rdzv::StoreError&) {
        return "";  // the store is gone (its rank ended): this rank reports its own
    }
}

}  // namespace ptrun::launcher
