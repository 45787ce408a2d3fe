// start_etcd_multi_node: the etcd backend's side of a multi-node job.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "ptrun/launcher/agent/multi_node.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/etcd_leadership.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/membership/store_connector.hpp"
#include "ptrun/launcher/membership/wait_progress.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/sys/route.hpp"
#include "round_store.hpp"

namespace ptrun::launcher {
namespace {

using std::chrono::milliseconds;

/// The longest one exchange with one etcd member may take before the next member is tried.
constexpr milliseconds kMemberTimeout{5'000};
/// The least time a failed exchange is tried again for (ClientOptions::retry_for).
constexpr milliseconds kRetryAtLeast{5'000};

etcd::ClientOptions client_options(const LaunchConfig& c) {
    etcd::ClientOptions o;
    for (const auto& e : c.etcd.endpoints) o.endpoints.push_back(etcd::Endpoint{e.host, e.port});
    o.https = c.etcd.https;
    o.cacert = c.etcd.cacert;
    o.cert = c.etcd.cert;
    o.key = c.etcd.key;
    o.io_timeout = std::min(c.rdzv.read_timeout, kMemberTimeout);
    // A failed exchange is tried again for a while: a member that just lost its peers holds
    // requests until it steps down (about its election timeout, 1 s by default), and answers `no
    // leader` only after that; a node cut off for the heartbeat timeout is lost to the others.
    o.retry_for =
        std::max<milliseconds>(c.rdzv.heartbeat * c.rdzv.keep_alive_max_attempt, kRetryAtLeast);
    return o;
}

/// The lease's TTL in whole seconds: a node silent for heartbeat x keep_alive_max_attempt is
/// lost, as with c10d; etcd grants no less than 2 s.
std::int64_t lease_ttl(const LaunchConfig& c) {
    const auto after = c.rdzv.heartbeat * c.rdzv.keep_alive_max_attempt;
    return std::max<std::int64_t>(2, (after.count() + 999) / 1000);
}

std::string etcd_name(const etcd::ClientOptions& o) {
    std::string text = "etcd ";
    for (std::size_t i = 0; i < o.endpoints.size(); ++i) {
        if (i) text += ", ";
        text += format_endpoint(o.endpoints[i].host, o.endpoints[i].port);
    }
    return text;
}

/// Opens leases and the leadership, retrying while etcd does not answer (at most join_timeout).
std::unique_ptr<EtcdLeadership> campaign(EtcdLeadershipOptions options, milliseconds within,
                                         const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    options.start_by = deadline;  // one try never runs past it (a member that never answers)
    for (bool said = false;; said = true) {
        try {
            return std::make_unique<EtcdLeadership>(options);
        } catch (const rdzv::StoreError& e) {
            if (std::chrono::steady_clock::now() + milliseconds(500) >= deadline) {
                throw RendezvousError("cannot reach the rendezvous's " + name +
                                      " within join_timeout: " + e.what());
            }
            if (!said) {
                options.coordinator.logger->warn("{}; retrying until join_timeout", e.what());
            }
        }
        std::this_thread::sleep_for(milliseconds(500));  // etcd may still be starting
    }
}

}  // namespace

MultiNode start_etcd_multi_node(const LaunchConfig& c, const std::string& random_id,
                                const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger) {
    MultiNode mn;
    const auto client = client_options(c);
    const auto name = etcd_name(client);
    const auto& first = c.etcd.endpoints.front();
    mn.self = self_node(c, random_id, first);
    mn.round_store = std::make_unique<RoundStore>(mn.self.addr, logger);

    EtcdLeadershipOptions lo;
    lo.client = client;
    lo.self_id = mn.self.id;
    lo.lease_ttl_s = lease_ttl(c);
    lo.coordinator = elected_coordinator_options(c, auth, logger, mn);
    mn.leadership = campaign(std::move(lo), c.rdzv.join_timeout, name);

    auto so = session_options(c, mn.self, auth, logger);
    so.store = HostPort{first.host, first.port};
    so.store_name = name;
    so.store_has_clock = false;
    so.connect = etcd_store_connector(client);
    so.before_join = [store = mn.round_store.get()] { return store->renew(); };
    try {
        mn.session = std::make_unique<RdzvSession>(std::move(so));
    } catch (const rdzv::StoreError& e) {
        throw RendezvousError("cannot reach the rendezvous's " + name +
                              " within join_timeout: " + e.what());
    }
    mn.workers_store = StoreEndpoint{
        .agent_hosted = true, .stats = [store = mn.round_store.get()] { return store->stats(); }};
    logger->info(
        "rendezvous through {} (lease {} s): each round's group rank 0 hosts its "
        "workers' store",
        name, lease_ttl(c));
    return mn;
}

}  // namespace ptrun::launcher
