#include "ptrun/launcher/membership/node_report_inbox.hpp"

#include <utility>

namespace ptrun::launcher {

void NodeReportInbox::put(const std::string& id, int round, std::string text) {
    // The callback runs under the lock, so that once on_change(nullptr) returns it never runs
    // again (its owner may then go); it must not call back into the inbox.
    std::lock_guard lock(mu_);
    auto it = by_node_.find(id);
    if (it == by_node_.end() && by_node_.size() >= max_nodes_) return;
    const std::size_t replaced = it == by_node_.end() ? 0 : it->second.text.size();
    if (bytes_ - replaced + text.size() > max_bytes_) return;
    bytes_ = bytes_ - replaced + text.size();
    by_node_[id] = Entry{round, std::move(text), std::chrono::steady_clock::now()};
    if (changed_) changed_();
}

std::map<std::string, NodeReportInbox::Entry> NodeReportInbox::snapshot() const {
    std::lock_guard lock(mu_);
    return by_node_;
}

void NodeReportInbox::on_change(std::function<void()> callback) {
    std::lock_guard lock(mu_);
    changed_ = std::move(callback);
}

}  // namespace ptrun::launcher
