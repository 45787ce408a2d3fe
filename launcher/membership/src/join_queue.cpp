#include "ptrun/launcher/membership/join_queue.hpp"

#include <utility>
#include <algorithm>

namespace ptrun::launcher {

const JoinEvent* JoinQueue::find(const std::string& id) const {
    auto it = position_.find(id);
    return it == position_.end() ? nullptr : &joins_[it->second];
}

void JoinQueue::put(const JoinEvent& join) {
    if (auto it = position_.find(join.node.id); it != position_.end()) {
        joins_[it->second] = join;
        return;
    }
    position_.emplace(join.node.id, joins_.size());
    joins_.push_back(join);
}

bool JoinQueue::erase(const std::string& id) {
    auto it = position_.find(id);
    if (it == position_.end()) return false;
    joins_.erase(joins_.begin() + static_cast<std::ptrdiff_t>(it->second));
    reindex();
    return true;
}

void JoinQueue::erase_if(const std::function<bool(const JoinEvent&)>& drop) {
    const auto before = joins_.size();
    std::erase_if(joins_, drop);
    if (joins_.size() != before) reindex();
}

std::vector<JoinEvent> JoinQueue::take(std::size_t count,
                                       const std::function<bool(const JoinEvent&)>& preferred) {
    std::stable_partition(joins_.begin(), joins_.end(), preferred);
    const auto n = static_cast<std::ptrdiff_t>(std::min(count, joins_.size()));
    std::vector<JoinEvent> taken(std::make_move_iterator(joins_.begin()),
                                 std::make_move_iterator(joins_.begin() + n));
    joins_.erase(joins_.begin(), joins_.begin() + n);
    reindex();
    return taken;
}

std::vector<JoinEvent> JoinQueue::take_all() {
    position_.clear();
    return std::exchange(joins_, {});
}

JoinEvent JoinQueue::take_at(const_iterator it) {
    JoinEvent taken = *it;
    joins_.erase(joins_.begin() + (it - joins_.cbegin()));
    reindex();
    return taken;
}

void JoinQueue::assign(std::vector<JoinEvent> joins) {
    joins_.clear();
    position_.clear();
    for (auto& j : joins) put(j);
}

void JoinQueue::reindex() {
    position_.clear();
    position_.reserve(joins_.size());
    for (std::size_t i = 0; i < joins_.size(); ++i) position_.emplace(joins_[i].node.id, i);
}

}  // namespace ptrun::launcher
