#pragma once
/// The nodes waiting for a round (joined, or spares), in join order, found by node id in O(1):
/// at 16,384 nodes the coordinator's scans of this list for one id made a close quadratic.

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptrun/launcher/membership/rdzv_events.hpp"

namespace ptrun::launcher {

class JoinQueue {
  public:
    using const_iterator = std::vector<JoinEvent>::const_iterator;

    /// Node `id`'s join, or null.
    const JoinEvent* find(const std::string& id) const;
    bool contains(const std::string& id) const { return position_.count(id) > 0; }
    /// Appends `join`; a node already waiting keeps its place and takes the new join (its seq).
    void put(const JoinEvent& join);
    /// Removes node `id`'s join; false when it was not there.
    bool erase(const std::string& id);
    /// Removes every join `drop` is true for, the others keeping their order.
    void erase_if(const std::function<bool(const JoinEvent&)>& drop);
    /// Removes and returns up to `count` joins: those `preferred` is true for first, then the
    /// others, each group in join order.
    std::vector<JoinEvent> take(std::size_t count,
                                const std::function<bool(const JoinEvent&)>& preferred);
    /// Removes and returns every join.
    std::vector<JoinEvent> take_all();
    /// Removes the join in `it`'s place.
    JoinEvent take_at(const_iterator it);
    /// Replaces the whole queue (a restored state).
    void assign(std::vector<JoinEvent> joins);

    std::size_t size() const { return joins_.size(); }
    bool empty() const { return joins_.empty(); }
    const_iterator begin() const { return joins_.begin(); }
    const_iterator end() const { return joins_.end(); }

  private:
    /// Removes the join at index `i`, node `id`'s (a string not in the join itself: it may have
    /// been moved out); the joins after it move up one place, in the index too (no rebuild).
    void erase_at(std::size_t i, const std::string& id);
    /// The index's places after the joins were reordered; the index holds exactly their ids.
    void reindex();

    std::vector<JoinEvent> joins_;
    std::unordered_map<std::string, std::size_t> position_;  ///< node id -> index in joins_
};

}  // namespace ptrun::launcher
