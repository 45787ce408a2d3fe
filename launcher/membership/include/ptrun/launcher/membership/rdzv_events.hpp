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
/// Agent `id` is exiting (job over, or stopped by a signal).
struct LeavingEvent {
    int round = 0;
    std::string id;
    std::string why;
};

/// Agent `id`'s start-up timeline (launcher/timeline's NodeTimeline as JSON, opaque here) as of
/// `round`, for the store host to merge; at most kMaxTimelineReport bytes.
struct TimelineReport {
    int round = 0;
    std::string id;
    std::string timeline;
};
inline constexpr std::size_t kMaxTimelineReport = 1 << 20;

using RdzvEvent =
    std::variant<JoinEvent, FailedEvent, SucceededEvent, LeavingEvent, TimelineReport>;

std::string encode(const RdzvEvent& event);
/// Throws std::runtime_error on a malformed event (it came over the network).
RdzvEvent decode_event(const std::string& text);

}  // namespace ptrun::launcher
