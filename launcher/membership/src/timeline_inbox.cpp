#include <utility>

#include "ptrun/launcher/membership/membership.hpp"

namespace ptrun::launcher {

void TimelineInbox::put(const std::string& id, std::string text) {
    // The callback runs under the lock, so that once on_change(nullptr) returns it never runs
    // again (its owner may then go); it must not call back into the inbox.
    std::lock_guard lock(mu_);
    auto it = by_node_.find(id);
    if (it == by_node_.end() && by_node_.size() >= kMaxNodes) return;
    by_node_[id] = std::move(text);
    if (changed_) changed_();
}

std::map<std::string, std::string> TimelineInbox::snapshot() const {
    std::lock_guard lock(mu_);
    return by_node_;
}

void TimelineInbox::on_change(std::function<void()> callback) {
    std::lock_guard lock(mu_);
    changed_ = std::move(callback);
}

}  // namespace ptrun::launcher
