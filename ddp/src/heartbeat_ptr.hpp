#pragma once
/// The worker's heartbeat record (ptrun::progress), shared by every group made from one
/// RunContext; null when the launcher gave none, so that a beat costs one test of a pointer.

#include <memory>

#include "ptrun/progress/heartbeat.hpp"

namespace ptrun::ddp::detail {

using HeartbeatPtr = std::shared_ptr<progress::Heartbeat>;

/// One beat when there is a record: a collective completed.
inline void beat(const HeartbeatPtr& heartbeat) noexcept {
    if (heartbeat) heartbeat->beat();
}

}  // namespace ptrun::ddp::detail
