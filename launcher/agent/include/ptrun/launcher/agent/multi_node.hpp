#pragma once
/// Sets up a multi-node job on this node: decides whether it hosts the rendezvous store (the
/// endpoint host is one of its own addresses, or is_host in --rdzv-conf; static: node rank 0),
/// hosts it and the round coordinator there, and opens this agent's rendezvous session.

#include <memory>
#include <string>

#include "ptrun/launcher/agent/agent.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/coordinator_core.hpp"
#include "ptrun/launcher/membership/rdzv_auth.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/membership/round.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::rdzv {
class TcpStoreServer;
}

namespace ptrun::launcher {

class Coordinator;
class RdzvSession;
class RoundStore;

struct MultiNode {
    std::unique_ptr<rdzv::TcpStoreServer> server;  ///< on the store host only
    std::unique_ptr<Coordinator> coordinator;      ///< on the store host only
    /// The members' timeline and status reports the coordinator passes on; on the store host
    /// only.
    std::unique_ptr<NodeReportInbox> timelines;
    std::unique_ptr<NodeReportInbox> statuses;
    std::unique_ptr<RdzvSession> session;
    /// etcd backend and the rendezvous file: the coordinator role (campaigned for by every
    /// node) and the workers' store this node hosts for each round it joins.
    std::unique_ptr<RoundHost> leadership;
    std::unique_ptr<RoundStore> round_store;
    NodeInfo self;
    StoreEndpoint workers_store;  ///< MASTER_ADDR/PORT every node's workers use

    MultiNode();
    MultiNode(MultiNode&&) noexcept;
    ~MultiNode();
    /// What the agent needs of it.
    Membership membership() const;
};

/// Starts this node's part of the rendezvous. `random_id` makes the agent's id unique; `auth`
/// seals and checks every rendezvous value. The store host listens on the endpoint's address only
/// (store_listen.hpp). Throws rdzv::StoreError when the store cannot be hosted, RendezvousError
/// when it cannot be reached.
MultiNode start_multi_node(const LaunchConfig& config, const std::string& random_id,
                           const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger);

/// The rounds' rules from the command line (nodes, restarts, timeouts), without the workers' store.
CoordinatorPolicy coordinator_policy(const LaunchConfig& config);

/// The coordinator options of a rendezvous whose coordinator is elected among the agents
/// (etcd-v2, store_type=file): the run's keys, the rounds' rules, auth; the members' statuses go
/// to `mn.statuses` (created here). The leadership sets where it stores.
CoordinatorOptions elected_coordinator_options(const LaunchConfig& config, const RdzvAuth& auth,
                                               std::shared_ptr<spdlog::logger> logger,
                                               MultiNode& mn);

/// This agent as it introduces itself: a unique id, its host, the address of the interface that
/// reaches `toward` (or --local-addr), its workers, --node-rank and --max-restarts.
NodeInfo self_node(const LaunchConfig& config, const std::string& random_id,
                   const HostPort& toward);

/// The session options both backends share (keys, self, nodes, timeouts, auth, the waiting
/// progress); the caller sets where the store is and how to reach it.
RdzvSessionOptions session_options(const LaunchConfig& config, const NodeInfo& self,
                                   const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger);

/// The etcd backend's part (start_multi_node with --rdzv-backend etcd-v2): no node hosts the
/// rendezvous; every node campaigns for the coordinator role and hosts a workers' store per
/// round. Throws RendezvousError naming every etcd endpoint when none answers within
/// join_timeout.
MultiNode start_etcd_multi_node(const LaunchConfig& config, const std::string& random_id,
                                const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger);

/// The file rendezvous's part (--rdzv-conf store_type=file): as etcd's, in the shared file
/// config.rdzv_file (file_leadership.hpp); this node's address is --local-addr or its first
/// interface's. Throws RendezvousError naming the file when it cannot be opened.
MultiNode start_file_multi_node(const LaunchConfig& config, const std::string& random_id,
                                const RdzvAuth& auth, std::shared_ptr<spdlog::logger> logger);

}  // namespace ptrun::launcher
