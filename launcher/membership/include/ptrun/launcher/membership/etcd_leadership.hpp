#pragma once
/// The etcd backend's coordinator role: every agent campaigns for it under a lease of its own
/// (etcd's leader election: the leader key exists while its holder keeps the lease alive); the
/// holder runs the Coordinator on a store fenced by that key, and another agent takes over
/// within the lease's TTL when the holder dies, carrying on from the state it left in etcd. Two
/// threads: one renews the lease every TTL/3, the other campaigns (one transaction, which also
/// writes the agent's alive key the first time) and then watches the leader key for as long as
/// another node holds it, one watch stream across renewals.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/etcd/client.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/membership.hpp"

namespace ptrun::launcher {

struct EtcdLeadershipOptions {
    etcd::ClientOptions client;
    std::string self_id;
    std::int64_t lease_ttl_s = 15;
    /// When set, the constructor's exchanges (the lease, the alive key) end by then, whatever
    /// the client's io_timeout and retry_for (the join_timeout).
    std::optional<std::chrono::steady_clock::time_point> start_by;
    /// What the coordinator runs with while this node leads; its connect, state_key and self_id
    /// are set here.
    CoordinatorOptions coordinator;
};

class EtcdLeadership final : public RoundHost {
  public:
    /// Grants this agent's lease, writes its alive key and campaigns once (this node may lead
    /// when it returns), then goes on in the background. Throws rdzv::StoreError when etcd
    /// cannot be reached.
    explicit EtcdLeadership(EtcdLeadershipOptions options);
    /// Stops coordinating and revokes the lease: another agent takes over at once.
    ~EtcdLeadership() override;
    EtcdLeadership(const EtcdLeadership&) = delete;
    EtcdLeadership& operator=(const EtcdLeadership&) = delete;

    /// The job is over for this node, which no longer campaigns. While it coordinates: waits
    /// until every other member has left (at most `timeout`), so that no member waits a lease's
    /// TTL for a new coordinator at the end, and the job's keys go when it stops. Otherwise
    /// true at once.
    bool wait_drained(const std::string& self, std::chrono::milliseconds timeout) override;
    /// While coordinating: waits until every other member has left; otherwise nullopt at once.
    std::optional<std::vector<std::string>> wait_members_left(
        const std::string& self, std::chrono::milliseconds timeout) override;
    /// The spares, while this node coordinates.
    std::vector<std::string> spare_hosts() const override;
    /// True while this node holds the coordinator role.
    bool leads() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
