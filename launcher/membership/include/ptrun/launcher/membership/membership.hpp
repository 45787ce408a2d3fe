#pragma once
/// What the agent drives of a multi-node job: its rendezvous session (RdzvSession) and, on the
/// store host, the coordinator's drain (Coordinator). Interfaces, so tests drive the agent's rounds
/// through fakes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/node_report_inbox.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"
#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::launcher {

/// The rendezvous failed for this node: timed out, rejected, or the store became unreachable.
struct RendezvousError : std::runtime_error {
    using std::runtime_error::runtime_error;
    int exit_code = 1;
};

/// This node's clock against the store host's (CLOCK_MONOTONIC of each): add `offset` to a time
/// of this node for the store host's; `error` is half the round trip it was measured with.
struct ClockOffset {
    std::int64_t offset_ns = 0;
    std::uint64_t error_ns = 0;
};

/// One agent's part in the job's rounds. Results come back through callbacks, on threads of the
/// implementation's own (the agent posts them onto its loop); no call blocks on the others.
class RoundMember {
  public:
    virtual ~RoundMember() = default;
    /// Joins the next round; `done` gets this node's placement, or `failed` the error.
    virtual void join(std::function<void(NodePlacement)> done,
                      std::function<void(RendezvousError)> failed) = 0;
    /// Watches the round of `placement` until it ends: `ended` gets its RoundEnd; `lost` gets a
    /// message when the store stops answering; both at most once per round.
    virtual void watch(const NodePlacement& placement, std::function<void(RoundEnd)> ended,
                       std::function<void(std::string)> lost) = 0;
    /// Tells the coordinator (asynchronously) about this node's workers or departure.
    virtual void report_failure(int round, RoundEnd end) = 0;
    virtual void report_success(int round) = 0;
    virtual void report_leaving(int round, std::string why) = 0;
    /// Leaving after this node's workers exited on --checkpoint-signal, with `exit_code`: the
    /// round ends as a checkpoint everywhere (the other nodes' workers checkpoint too).
    virtual void report_checkpointed(int round, int exit_code, std::string why) = 0;
    /// Sends this node's report of `kind` (JSON) to the store host's agent; by default dropped.
    virtual void report(ReportKind /*kind*/, int /*round*/, std::string /*text*/) {}
    /// The clock offset measured at the last join, if any.
    virtual std::optional<ClockOffset> clock_offset() const { return std::nullopt; }
    /// Sends what is queued (bounded), then stops; no callback comes after it returns.
    virtual void stop() = 0;
};

/// The store host's side: it keeps the store until the other nodes have left.
class RoundHost {
  public:
    virtual ~RoundHost() = default;
    /// Blocks until the job has ended and every member but `self` has left, at most `timeout`;
    /// true when drained.
    virtual bool wait_drained(const std::string& self, std::chrono::milliseconds timeout) = 0;
    /// Blocks until every member of the last round but `self` has left (its agent ended, its
    /// workers before it), whether or not the job has ended, at most `timeout`. Returns the host
    /// names of the members that had not left (empty: all had); nullopt when this node does not
    /// coordinate the rounds and cannot tell.
    virtual std::optional<std::vector<std::string>> wait_members_left(
        const std::string& /*self*/, std::chrono::milliseconds /*timeout*/) {
        return std::nullopt;
    }
    /// The host names of the nodes waiting as spares, in the order they take places.
    virtual std::vector<std::string> spare_hosts() const { return {}; }
};

/// Multi-node: this node's rendezvous session and, on the store host, the coordinator. The
/// agent then takes its place in the job (group rank, world size, restart count, store) from
/// each round's assignment instead of from the command line.
struct Membership {
    RoundMember* session = nullptr;
    RoundHost* coordinator = nullptr;  ///< non-null on the store host
    std::string self_id;
    /// This node's address as the rendezvous knows it (--local-addr, or the route toward it).
    std::string self_addr;
    std::chrono::milliseconds close_timeout{30'000};
    /// The members' reports; on the store host only.
    NodeReportInbox* timelines = nullptr;
    NodeReportInbox* statuses = nullptr;
};

}  // namespace ptrun::launcher
