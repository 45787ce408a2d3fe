#pragma once
/// Runs CoordinatorCore on the store host: a thread that pops the agents' events from the store,
/// reads heartbeat counters once per interval, and writes rounds and round ends back.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/membership/coordinator_core.hpp"
#include "ptrun/launcher/membership/membership.hpp"
#include "ptrun/launcher/membership/rdzv_auth.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/store_connector.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

struct CoordinatorOptions {
    HostPort store;  ///< the local store server (loopback)
    RdzvKeys keys;
    CoordinatorPolicy policy;
    std::chrono::milliseconds heartbeat{5'000};
    /// Wipes the workers' keys before a round is published (the store host's server).
    std::function<void()> clear_worker_keys;
    RdzvAuth auth;  ///< seals what the coordinator writes, checks the events it reads
    std::shared_ptr<spdlog::logger> logger;
    /// A member's report (its timeline or status, unparsed), on the coordinator's thread; null:
    /// reports are dropped.
    std::function<void(NodeReport)> on_report;
    /// Opens the coordinator's one store connection; empty: a TCP client to `store` connecting
    /// within 10 s (and reconnecting within 10 s after a lost connection).
    StoreConnector connect;
    /// Non-empty (etcd backend, where the coordinator role moves between nodes): the key under
    /// which the coordinator keeps its state (CoordinatorCore::save, the round tokens and its
    /// node's id; sealed), written after every change. A coordinator finding state there carries
    /// on from it; its nodes whose keys.alive() is gone (their leases expired) are lost. A state
    /// none of whose nodes lives is another job's under the same run id: the coordinator starts
    /// afresh. A node lives when it is this one, or when its alive key exists and its heartbeat
    /// counter moves within policy.lost_after (a node killed with -9 keeps its key for its
    /// lease's TTL). Joins from nodes without an alive key, or of that earlier job, are dropped.
    std::string state_key;
    std::string self_id;
    /// Starting afresh: removes what the earlier job left (its nodes `ids`' admissions, spare
    /// marks and heartbeats, every round's end, the join status); empty: nothing is removed.
    std::function<void(const std::vector<std::string>& ids)> forget_job;
    /// Why a node of a taken-over state whose alive key is gone is lost (the run log's words).
    std::string gone_reason = "its rendezvous lease expired";
};

class Coordinator final : public RoundHost {
  public:
    /// Connects to the store and starts the thread. Throws rdzv::StoreError when it cannot
    /// connect.
    explicit Coordinator(CoordinatorOptions options);
    /// Stops the thread (interrupts its store calls).
    ~Coordinator() override;
    Coordinator(const Coordinator&) = delete;
    Coordinator& operator=(const Coordinator&) = delete;

    /// Blocks until the job has ended and every member but `self` has left, at most `timeout`;
    /// true when drained. The store host calls it before it stops the store.
    bool wait_drained(const std::string& self, std::chrono::milliseconds timeout) override;
    /// Blocks until every member of the last round but `self` has left, at most `timeout`;
    /// returns those that had not (their host names).
    std::optional<std::vector<std::string>> wait_members_left(
        const std::string& self, std::chrono::milliseconds timeout) override;
    /// The host names of the nodes waiting as spares (the core's, under its lock).
    std::vector<std::string> spare_hosts() const override;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
