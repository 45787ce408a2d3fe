#pragma once
/// The Coordinator a node runs while it holds the coordinator role of a rendezvous without a
/// store host (etcd-v2, store_type=file): started when it takes the role, stopped when it loses
/// it, drained at the job's end. Thread-safe.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/coordinator.hpp"

namespace ptrun::launcher {

class CoordinatorSlot {
  public:
    /// Starts the coordinator (this node now leads). Throws rdzv::StoreError when it cannot
    /// connect to its store.
    void start(CoordinatorOptions options);
    /// Stops the coordinator, if any (joins its thread outside the lock).
    void stop();
    /// True while a coordinator runs here.
    bool running() const;
    /// The job is over for this node, which takes the role no more (retired()). While it
    /// coordinates: waits until every other member has left (at most `timeout`), then stops the
    /// coordinator and marks the job drained (its keys may go). Otherwise true at once.
    bool drain(const std::string& self, std::chrono::milliseconds timeout);
    /// While it coordinates: Coordinator::wait_members_left (at most `timeout`); otherwise
    /// nullopt at once (another node coordinates).
    std::optional<std::vector<std::string>> wait_members_left(const std::string& self,
                                                              std::chrono::milliseconds timeout);
    /// True once drain() was called.
    bool retired() const { return retired_; }
    /// True once drain() drained the job while coordinating.
    bool drained() const { return drained_; }
    /// The spares, while a coordinator runs here.
    std::vector<std::string> spare_hosts() const;

  private:
    mutable std::mutex mu_;
    std::shared_ptr<Coordinator> coordinator_;
    std::atomic<bool> retired_{false};
    std::atomic<bool> drained_{false};
};

}  // namespace ptrun::launcher
