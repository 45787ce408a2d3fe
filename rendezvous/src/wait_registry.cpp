#include "wait_registry.hpp"

namespace ptrun::rdzv::detail {

void WaitRegistry::add(ConnId waiter, const std::vector<std::string>& keys) {
    remove(waiter);
    if (keys.empty()) return;
    Wait& wait = waits_[waiter];
    wait.remaining = keys.size();
    wait.entries.reserve(keys.size());
    for (const auto& key : keys) {
        Queue& q = by_key_[key];
        wait.entries.push_back(Entry{key, q.insert(q.end(), Slot{waiter, wait.entries.size()})});
    }
}

void WaitRegistry::unlink(ConnId waiter, Wait& wait) {
    for (auto& e : wait.entries) {
        if (!e.linked) continue;
        auto q = by_key_.find(e.key);
        q->second.erase(e.it);
        if (q->second.empty()) by_key_.erase(q);
    }
    waits_.erase(waiter);
}

std::vector<ConnId> WaitRegistry::notify(const std::string& key, bool only_one) {
    std::vector<ConnId> ready;
    if (by_key_.empty()) return ready;  // nobody waits: no hashing (every write comes here)
    auto q = by_key_.find(key);
    if (q == by_key_.end()) return ready;
    // Consume the entries for `key` in registration order.
    Queue& queue = q->second;
    while (!queue.empty()) {
        const Slot slot = queue.front();
        queue.pop_front();
        Wait& wait = waits_.at(slot.waiter);
        wait.entries[slot.entry].linked = false;
        const ConnId waiter = slot.waiter;
        if (--wait.remaining == 0) {
            waits_.erase(waiter);
            ready.push_back(waiter);
        }
        if (only_one) break;
    }
    if (queue.empty()) by_key_.erase(q);
    return ready;
}

bool WaitRegistry::remove(ConnId waiter) {
    auto it = waits_.find(waiter);
    if (it == waits_.end()) return false;
    unlink(waiter, it->second);
    return true;
}

}  // namespace ptrun::rdzv::detail
