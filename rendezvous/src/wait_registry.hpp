#pragma once
/// WaitRegistry: which connections wait on which missing keys, and how many keys each lacks.

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace ptrun::rdzv::detail {

using ConnId = std::uint64_t;

/// At most one wait per waiter. Registration, notification and removal cost O(keys involved);
/// no stale entries are left behind, so cancelled waits cannot accumulate.
class WaitRegistry {
  public:
    /// Registers `waiter` on `keys` (duplicates count twice, like torch); replaces any earlier
    /// wait of the same waiter. An empty `keys` registers nothing.
    void add(ConnId waiter, const std::vector<std::string>& keys);
    /// `key` was written: every waiter on it (only the first if `only_one`) has one key fewer
    /// to wait for. Returns the waiters that now have all their keys, in registration order.
    std::vector<ConnId> notify(const std::string& key, bool only_one = false);
    /// Drops `waiter`'s wait, if any. True if there was one.
    bool remove(ConnId waiter);
    bool waiting(ConnId waiter) const { return waits_.count(waiter) != 0; }
    std::size_t size() const noexcept { return waits_.size(); }

  private:
    struct Slot {
        ConnId waiter;
        std::size_t entry;  ///< index into the waiter's Wait::entries
    };
    using Queue = std::list<Slot>;
    struct Entry {
        std::string key;
        Queue::iterator it;
        bool linked = true;  ///< false once a notify consumed it
    };
    struct Wait {
        std::size_t remaining = 0;
        std::vector<Entry> entries;
    };

    void unlink(ConnId waiter, Wait& wait);

    std::unordered_map<std::string, Queue> by_key_;
    std::unordered_map<ConnId, Wait> waits_;
};

}  // namespace ptrun::rdzv::detail
