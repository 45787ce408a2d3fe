#pragma once
/// One agent's side of the multi-node rendezvous: joins rounds, beats its heart for the whole
/// job, watches the running round's end, and reports its workers' outcome. Store I/O runs on the
/// session's own threads; results reach the agent through callbacks (the agent posts them onto
/// its event loop), so a slow or unreachable store never blocks supervision.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/node_range.hpp"
#include "ptrun/launcher/cli/rdzv_settings.hpp"
#include "ptrun/launcher/membership/membership.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/rdzv_auth.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/round.hpp"
#include "ptrun/launcher/membership/store_connector.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

/// How a join is going, for whoever tells the person waiting (wait_progress.hpp).
struct JoinProgress {
    bool done = false;  ///< the join ended (admitted or failed): the last call for this join
    int joined = -1;    ///< nodes joined so far per the coordinator, -1 when unknown
    std::chrono::seconds elapsed{0};
};

struct RdzvSessionOptions {
    HostPort store;  ///< where the store is (messages name it; the default connector dials it)
    RdzvKeys keys;
    NodeInfo self;
    NodeRange nnodes;
    RdzvSettings settings;
    RdzvAuth auth;  ///< seals what this agent writes, checks what it reads (rdzv_auth.hpp)
    std::shared_ptr<spdlog::logger> logger;
    /// Called on the join thread after the first second of waiting (a later join: after
    /// `progress_every`), then every `progress_every`, and once with `done` when the join ends;
    /// null: a log line every `progress_every`.
    std::function<void(const JoinProgress&)> on_waiting;
    std::chrono::milliseconds progress_every{5'000};
    /// Opens the session's store connection: one shared by join, watch and heartbeat where the
    /// store can cut a wait short, else one each (session_stores.hpp); empty: TCP clients to
    /// `store`, each connecting within join_timeout (store_connector.hpp).
    StoreConnector connect;
    /// How messages name the store; empty: `store` as host:port.
    std::string store_name;
    /// False where the store cannot tell its host's clock (etcd, a file): no clock samples
    /// (clock_offset() stays nullopt) and no request spent on them.
    bool store_has_clock = true;
    /// Called on the join thread before each join: the port of the workers' store this node
    /// hosts for the round it joins (NodeInfo::store_port); null: the self's store_port as given.
    std::function<std::uint16_t()> before_join;
};

class RdzvSession final : public RoundMember {
  public:
    /// Connects to the store (retrying until join_timeout) and starts beating. Throws
    /// RendezvousError.
    explicit RdzvSession(RdzvSessionOptions options);
    /// stop(), then joins the threads.
    ~RdzvSession() override;
    RdzvSession(const RdzvSession&) = delete;
    RdzvSession& operator=(const RdzvSession&) = delete;

    /// Joins the next round on a session thread; `done` gets this node's placement, or the error.
    void join(std::function<void(NodePlacement)> done,
              std::function<void(RendezvousError)> failed) override;
    /// Watches the round of `placement` until it ends: `ended` gets its RoundEnd (authenticated
    /// with the placement's token); `lost` gets a message when the store stops answering
    /// (heartbeats included), both at most once per round.
    void watch(const NodePlacement& placement, std::function<void(RoundEnd)> ended,
               std::function<void(std::string)> lost) override;
    /// Tells the coordinator (asynchronously) about this node's workers or departure.
    void report_failure(int round, RoundEnd end) override;
    void report_success(int round) override;
    void report_leaving(int round, std::string why) override;
    void report_checkpointed(int round, int exit_code, std::string why) override;
    /// Queues this node's report of `kind` for the store host (at most kMaxNodeReport bytes,
    /// else dropped).
    void report(ReportKind kind, int round, std::string text) override;
    /// Measured on the join thread once, right after the first admission was handed on: the
    /// best of 5 GETs of the store host's clock key (the smallest round trip); nullopt before,
    /// or when the key never came (then tried again after the next admission).
    std::optional<ClockOffset> clock_offset() const override;
    /// Sends what is queued (at most read_timeout), then interrupts every store call and stops.
    void stop() override;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
