#include "ptrun/launcher/agent/multi_node.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ptrun/launcher/agent/agent_store.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/etcd_leadership.hpp"
#include "ptrun/launcher/membership/file_leadership.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/membership/store_listen.hpp"
#include "ptrun/launcher/membership/wait_progress.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "ptrun/sys/route.hpp"
#include "round_store.hpp"

namespace ptrun::launcher {
namespace {

std::shared_ptr<spdlog::logger> quiet_store_logger(const std::shared_ptr<spdlog::logger>& logger) {
    auto l = logger->clone("store");
    l->set_level(spdlog::level::warn);
    return l;
}

}  // namespace

MultiNode::MultiNode() = default;
MultiNode::MultiNode(MultiNode&&) noexcept = default;
MultiNode::~MultiNode() {
    session.reset();  // its threads first: they talk to the store
    coordinator.reset();
    leadership.reset();
    round_store.reset();
    timelines.reset();  // after the coordinator, whose thread puts into them
    statuses.reset();
    server.reset();
}

Membership MultiNode::membership() const {
    Membership m;
    m.session = session.get();
    m.coordinator = coordinator ? static_cast<RoundHost*>(coordinator.get()) : leadership.get();
    m.timelines = timelines.get();
    m.statuses = statuses.get();
    m.self_id = self.id;
    m.self_addr = self.addr;
    return m;
}

CoordinatorPolicy coordinator_policy(const LaunchConfig& c) {
    CoordinatorPolicy p;
    p.min_nodes = c.nnodes.min;
    p.max_nodes = c.nnodes.max;
    p.max_restarts = c.max_restarts;
    p.replace_failed = c.restart_policy == RestartPolicyKind::Failed;
    p.last_call = c.rdzv.last_call_timeout;
    p.lost_after = c.rdzv.heartbeat * c.rdzv.keep_alive_max_attempt;
    p.heartbeat = c.rdzv.heartbeat;
    return p;
}

CoordinatorOptions elected_coordinator_options(const LaunchConfig& c, const RdzvAuth& auth,
                                               std::shared_ptr<spdlog::logger> logger,
                                               MultiNode& mn) {
    CoordinatorOptions co;
    co.keys = rdzv_keys(c.run_id);
    co.policy = coordinator_policy(c);  // no master_addr: each round's group rank 0 hosts it
    co.heartbeat = c.rdzv.heartbeat;
    co.auth = auth;
    co.logger = std::move(logger);
    // The members' statuses reach whichever node coordinates. Their start-up timelines are not
    // gathered: no node hosts a store whose clock the others measure theirs against (c10d's
    // clock key), and times of unrelated CLOCK_MONOTONICs cannot be set side by side.
    mn.statuses = std::make_unique<NodeReportInbox>();
    co.on_report = [statuses = mn.statuses.get()](NodeReport r) {
        if (r.kind == ReportKind::Status) statuses->put(r.id, r.round, std::move(r.text));
    };
    return co;
}

NodeInfo self_node(const LaunchConfig& c, const std::string& random_id, const HostPort& toward) {
    NodeInfo n;
    n.id = c.hostname + ":" + std::to_string(::getpid()) + ":" + random_id;
    n.hostname = c.hostname;
    n.addr =
        !c.local_addr.empty() ? c.local_addr : sys::route_source_address(toward.host, toward.port);
    n.nproc = c.nproc_per_node;
    n.node_rank = c.node_rank_given ? c.node_rank : -1;
    n.max_restarts = c.max_restarts;
    n.replace_failed = c.restart_policy == RestartPolicyKind::Failed;
    return n;
}

RdzvSessionOptions session_options(const LaunchConfig& c, const NodeInfo& self,
                                   const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger) {
    RdzvSessionOptions so;
    so.keys = rdzv_keys(c.run_id);
    so.self = self;
    so.nnodes = c.nnodes;
    so.settings = c.rdzv;
    so.auth = auth;
    auto progress = std::make_shared<WaitProgress>(c, logger);
    so.on_waiting = [progress](const JoinProgress& p) { progress->update(p); };
    so.progress_every = progress->interval();
    so.logger = std::move(logger);
    return so;
}

MultiNode start_multi_node(const LaunchConfig& c, const std::string& random_id,
                           const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger) {
    if (c.rdzv_backend == RdzvBackend::Etcd)
        return start_etcd_multi_node(c, random_id, auth, logger);
    if (!c.rdzv_file.empty()) return start_file_multi_node(c, random_id, auth, logger);
    MultiNode mn;
    const HostPort& store = c.rendezvous_store;
    const bool v6 = store.host.find(':') != std::string::npos;
    bool numeric = false;
    const auto resolved = resolve_for_listen(store.host, numeric);
    const bool local =
        std::any_of(resolved.begin(), resolved.end(), [](const auto& a) { return a.local; });
    const bool candidate = c.rdzv.is_host.value_or(local);
    std::string listen_address;  // empty: every interface
    if (candidate) {
        auto choice = choose_listen_address(store.host, numeric, resolved, c.hostname);
        listen_address = choice.address;
        int fd = listen_on(listen_address, store.port, v6);
        if (fd >= 0) {
            rdzv::TcpStoreServerOptions so;
            so.adopt_fd = fd;
            so.logger = quiet_store_logger(logger);
            so.clock_key = rdzv_keys(c.run_id).clock();  // the agents' clock offsets (timeline)
            mn.server = std::make_unique<rdzv::TcpStoreServer>(std::move(so));
            if (listen_address.empty()) {
                logger->info("hosting the rendezvous store on every interface, port {}: {}",
                             store.port, choice.why);
            } else {
                logger->info("hosting the rendezvous store on {}",
                             format_endpoint(listen_address, store.port));
            }
        } else if (errno == EADDRINUSE && !c.rdzv.is_host) {
            logger->info(
                "port {} is taken on this host (another agent hosts the store); joining it",
                store.port);
        } else {
            throw rdzv::StoreError("cannot host the rendezvous store on port " +
                                   std::to_string(store.port) + ": " + std::strerror(errno));
        }
    }

    mn.self = self_node(c, random_id, store);
    mn.self.is_store_host = mn.server != nullptr;

    const auto keys = rdzv_keys(c.run_id);
    if (mn.server) {
        CoordinatorOptions co;
        // The coordinator reaches the store where it listens (loopback when it listens everywhere).
        const std::string local_store = !listen_address.empty() ? listen_address
                                        : v6                    ? "::1"
                                                                : "127.0.0.1";
        co.store = HostPort{local_store, store.port};
        co.keys = keys;
        co.policy = coordinator_policy(c);
        co.policy.master_addr = store.host;
        co.policy.master_port = store.port;
        co.heartbeat = c.rdzv.heartbeat;
        auto* server = mn.server.get();
        co.clear_worker_keys = [server] { server->clear_except(kRdzvKeyRoot); };
        co.auth = auth;
        co.logger = logger;
        mn.timelines = std::make_unique<NodeReportInbox>();
        mn.statuses = std::make_unique<NodeReportInbox>();
        co.on_report = [timelines = mn.timelines.get(),
                        statuses = mn.statuses.get()](NodeReport r) {
            auto* inbox = r.kind == ReportKind::Timeline ? timelines : statuses;
            inbox->put(r.id, r.round, std::move(r.text));
        };
        mn.coordinator = std::make_unique<Coordinator>(std::move(co));
    }
    auto so = session_options(c, mn.self, auth, logger);
    so.store = store;
    try {
        mn.session = std::make_unique<RdzvSession>(std::move(so));
    } catch (const rdzv::StoreError& e) {
        throw RendezvousError("cannot reach the rendezvous store at " +
                              format_endpoint(store.host, store.port) +
                              " within join_timeout: " + e.what());
    }
    mn.workers_store = StoreEndpoint{.host = store.host, .port = store.port, .agent_hosted = true};
    if (auto* server = mn.server.get()) {
        mn.workers_store.stats = [server] { return store_numbers(*server); };
    }
    return mn;
}

}  // namespace ptrun::launcher
