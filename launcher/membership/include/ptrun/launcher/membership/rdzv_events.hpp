#pragma once
/// Messages agents send to the coordinator through the store's event queue.

#include <string>
#include <variant>

#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::launcher {

/// A node asks to be part of the next round (its `seq`-th join).
struct JoinEvent {
    NodeInfo node;
    int seq = 0;
};
/// A member's workers failed in `round`; `end` describes the failure.
struct FailedEvent {
    int round = 0;
    std::string id;
    RoundEnd end;
};
/// Every worker of member `id` succeeded in `round`.
struct SucceededEvent {
    int round = 0;
    std::string id;
};
/// Agent `id` is exiting (job over, or stopped by a signal). `checkpointed`: its workers exited
/// on --checkpoint-signal (a preemption), and it exits with `exit_code`.
struct LeavingEvent {
    int round = 0;
    std::string id;
    std::string why;
    bool checkpointed = false;
    int exit_code = 0;
};

/// What an agent tells the store host's agent about itself, opaque here: its start-up timeline
/// (launcher/timeline's NodeTimeline as JSON) or its status (watchdog's /status document).
enum class ReportKind { Timeline, Status };
/// Agent `id`'s report of `kind` as of `round`; at most kMaxNodeReport bytes of `text`.
struct NodeReport {
    ReportKind kind = ReportKind::Timeline;
    int round = 0;
    std::string id;
    std::string text;
};
inline constexpr std::size_t kMaxNodeReport = 1 << 20;

using RdzvEvent = std::variant<JoinEvent, FailedEvent, SucceededEvent, LeavingEvent, NodeReport>;

std::string encode(const RdzvEvent& event);
/// Throws std::runtime_error on a malformed event (it came over the network).
RdzvEvent decode_event(const std::string& text);

}  // namespace ptrun::launcher
