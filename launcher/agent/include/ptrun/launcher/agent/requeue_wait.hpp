#pragma once
/// --requeue on a multi-node job: `scontrol requeue` ends every step of the job at once, so node
/// rank 0 requeues only once the other nodes' workers have ended too (they may still be writing
/// their part of a sharded checkpoint when its own are done). Every node's ptrun leaves the
/// rendezvous once its workers are gone: the coordinator sees who has not left yet.

#include <chrono>
#include <string>

#include "ptrun/launcher/membership/membership.hpp"

namespace ptrun::launcher {

/// What the wait is for beyond the other nodes' --checkpoint-grace: their --shutdown-timeout
/// (the workers that overstay it get SIGTERM, then SIGKILL) and this much for their agents'
/// departures to reach the coordinator.
inline constexpr std::chrono::milliseconds kRequeueWaitMargin{5'000};

/// The latest moment node rank 0 waits until: the other nodes got the checkpoint signal when this
/// one did (`checkpoint_started`; SLURM signals every task), and ended their workers by
/// `checkpoint_grace` + `shutdown_timeout` after it. Pure.
std::chrono::steady_clock::time_point requeue_deadline(
    std::chrono::steady_clock::time_point checkpoint_started,
    std::chrono::milliseconds checkpoint_grace, std::chrono::milliseconds shutdown_timeout);

/// What wait_for_other_nodes waited for, for the log.
struct RequeueWaitResult {
    /// false: waited until the deadline (a node had not left, or this one cannot tell)
    bool all_ended = false;
    std::string text;  ///< what it waited for and how long
};

/// Blocks until every node of the last round but `self` has left the rendezvous (its workers
/// ended), at most until `deadline`. `host`: this node's coordinator role (Membership::
/// coordinator); null, or a role another node holds: this node cannot see the others and waits
/// until `deadline` (bounded: the others' workers are gone by then). Never throws.
RequeueWaitResult wait_for_other_nodes(RoundHost* host, const std::string& self,
                                       std::chrono::steady_clock::time_point deadline);

}  // namespace ptrun::launcher
