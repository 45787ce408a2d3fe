// start_file_multi_node: the c10d rendezvous through a shared file (--rdzv-conf store_type=file).
#include <spdlog/spdlog.h>

#include "ptrun/launcher/agent/multi_node.hpp"
#include "ptrun/launcher/membership/file_leadership.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/membership/store_connector.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/sys/interface_address.hpp"
#include "round_store.hpp"

namespace ptrun::launcher {

MultiNode start_file_multi_node(const LaunchConfig& c, const std::string& random_id,
                                const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger) {
    MultiNode mn;
    LaunchConfig own = c;
    if (own.local_addr.empty()) {
        own.local_addr = sys::first_interface_address();
        if (own.local_addr.empty()) own.local_addr = "127.0.0.1";  // no network: one host
    }
    mn.self = self_node(own, random_id, HostPort{});
    mn.round_store = std::make_unique<RoundStore>(mn.self.addr, logger);
    const std::string name = "rendezvous file " + c.rdzv_file;

    FileLeadershipOptions lo;
    lo.path = c.rdzv_file;
    lo.self_id = mn.self.id;
    lo.coordinator = elected_coordinator_options(c, auth, logger, mn);
    try {
        mn.leadership = std::make_unique<FileLeadership>(std::move(lo));
    } catch (const rdzv::StoreError& e) {
        throw RendezvousError(std::string("cannot open the rendezvous: ") + e.what());
    }

    auto so = session_options(c, mn.self, auth, logger);
    so.store_name = name;
    so.store_has_clock = false;
    so.connect = file_store_connector(c.rdzv_file);
    so.before_join = [store = mn.round_store.get()] { return store->renew(); };
    try {
        mn.session = std::make_unique<RdzvSession>(std::move(so));
    } catch (const rdzv::StoreError& e) {
        throw RendezvousError("cannot reach the " + name + ": " + e.what());
    }
    mn.workers_store = StoreEndpoint{
        .agent_hosted = true, .stats = [store = mn.round_store.get()] { return store->stats(); }};
    logger->info(
        "rendezvous through the file {} (no rendezvous port): each round's group rank 0 hosts "
        "its workers' store on {}",
        c.rdzv_file, mn.self.addr);
    return mn;
}

}  // namespace ptrun::launcher
