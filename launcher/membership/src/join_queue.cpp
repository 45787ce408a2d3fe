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
    erase_at(it->second, id);
    return true;
}

void JoinQueue::erase_if(const std::function<bool(const JoinEvent&)>& drop) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < joins_.size(); ++i) {
        if (drop(joins_[i])) {
            position_.erase(joins_[i].node.id);
            continue;
        }
        if (kept != i) {
            joins_[kept] = std::move(joins_[i]);
            position_.find(joins_[kept].node.id)->second = kept;
        }
        ++kept;
    }
    joins_.resize(kept);
}

std::vector<JoinEvent> JoinQueue::take(std::size_t count,
                                       const std::function<bool(const JoinEvent&)>& preferred) {
    std::stable_partition(joins_.begin(), joins_.end(), preferred);
    const auto n = static_cast<std::ptrdiff_t>(std::min(count, joins_.size()));
    std::vector<JoinEvent> taken(std::make_move_iterator(joins_.begin()),
                                 std::make_move_iterator(joins_.begin() + n));
    for (const auto& j : taken) position_.erase(j.node.id);
    joins_.erase(joins_.begin(), joins_.begin() + n);
    reindex();
    return taken;
}

std::vector<JoinEvent> JoinQueue::take_all() {
    position_.clear();
    return std::exchange(joins_, {});
}

JoinEvent JoinQueue::take_at(const_iterator it) {
    const auto i = static_cast<std::size_t>(it - joins_.cbegin());
    JoinEvent taken = std::move(joins_[i]);
    erase_at(i, taken.node.id);
    return taken;
}

void JoinQueue::assign(std::vector<JoinEvent> joins) {
    joins_.clear();
    position_.clear();
    for (auto& j : joins) put(j);
}

void JoinQueue::erase_at(std::size_t i, const std::string& id) {
    position_.erase(id);
    joins_.erase(joins_.begin() + static_cast<std::ptrdiff_t>(i));
    for (std::size_t k = i; k < joins_.size(); ++k) position_.find(joins_[k].node.id)->second = k;
}

void JoinQueue::reindex() {
    for (std::size_t i = 0; i < joins_.size(); ++i) position_.find(joins_[i].node.id)->second = i;
}

}  // namespace ptrun::launcher
