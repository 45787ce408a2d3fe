#include "ptrun/launcher/membership/root_cause_claim.hpp"

#include "ptrun/launcher/membership/placement_store_client.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {

std::string claim_root_cause(const LaunchConfig& config, const FixedPlacement& placement,
                             const std::string& mine, std::chrono::milliseconds timeout) {
    if (!config.master_port || placement.world_size < 2 || mine.empty()) return "";
    try {
        auto client = placement_store_client(config, placement, timeout, timeout);
        // compare_set stores `mine` only where nothing is, and answers what is stored then.
        const auto first = client->compare_set(job_exit_key(config, "root_cause"), "", mine);
        return first == mine ? "" : first;
    } catch (const rdzv::StoreError&) {
        return "";  // the store is gone (its rank ended): this rank reports its own
    }
}

}  // namespace ptrun::launcher
