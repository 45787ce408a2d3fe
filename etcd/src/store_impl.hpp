#pragma once
/// EtcdStore's state and the steps its verbs share: key names, fenced transactions, reads of
/// several keys at one revision, and waiting for keys by watching (never by polling).

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptrun/etcd/etcd_store.hpp"

namespace ptrun::etcd {

struct EtcdStore::Impl {
    explicit Impl(EtcdStoreOptions o);

    /// The etcd key of store key `key`.
    std::string full(std::string_view key) const { return options.root + std::string(key); }
    /// The prefix of queue `key`'s items.
    std::string queue_prefix(std::string_view key) const { return full(key) + "/q/"; }
    /// A new queue item's name under a queue prefix: unique to this store and call.
    std::string item_suffix();
    /// True when `key` (relative to the root) names a queue item, not a store key.
    static bool is_queue_item(std::string_view key);
    /// True when `key` is an item of the queue whose items start with `prefix`.
    static bool is_item_of(std::string_view prefix, std::string_view key);

    /// txn with the fence's compare added (when there is a fence); throws FenceLost when that
    /// compare failed. The fence's read is the last of the failure branch's ranges.
    TxnResult fenced(std::string_view operation, std::vector<Compare> compares,
                     std::vector<Op> success, std::vector<Op> failure = {});

    /// Which of `keys` exist (a value, or a non-empty queue: then ""), read at one revision
    /// per chunk of keys; `revision` is the lowest read.
    struct Presence {
        std::int64_t revision = 0;
        std::vector<std::optional<std::string>> values;
        bool all() const;
    };
    Presence read(const std::vector<std::string>& keys);
    /// Blocks until every key exists, at most `timeout` (then StoreTimeout naming `operation`):
    /// reads, and watches the missing keys from the revision after the read. Keys whose last
    /// wait here timed out (a join's admission, waited in chunks) are watched first and read
    /// once the watch is set up: two requests where reading first takes three whenever anything
    /// was written meanwhile (at scale, always).
    Presence wait(std::string_view operation, const std::vector<std::string>& keys,
                  rdzv::Duration timeout);

    /// Pops up to `max` items of queue `key` (waiting at most `timeout` for one); empty when
    /// other consumers won the items until the deadline.
    std::vector<std::string> pop(std::string_view operation, std::string_view key, std::size_t max,
                                 rdzv::Duration timeout);
    /// Keys under the root that are not queue items, relative to the root.
    std::vector<std::string> keys();

    /// What this store last wrote to counter `key` through add (nullopt: nothing known): add's
    /// first compare-and-swap goes on it without a read first.
    std::optional<KeyValue> counter_written(const std::string& key);
    /// Notes add's write of `value` to counter `key` at `revision` (at most kCountersKept keys:
    /// past that the notes start over).
    void note_counter(const std::string& key, std::int64_t value, std::int64_t revision);

    EtcdStoreOptions options;
    Client client;
    std::string store_tag;  ///< 16 random hex digits, the first half of every item suffix
    std::atomic<std::uint64_t> pushed{0};
    std::mutex missed_mu;
    std::vector<std::string> missed;  ///< the keys of the last wait that timed out (missed_mu)
    std::mutex counters_mu;
    std::unordered_map<std::string, KeyValue> counters;  ///< note_counter's, by etcd key
    static constexpr std::size_t kCountersKept = 4'096;
};

/// 16 random hex digits (from std::random_device).
std::string random_tag();

/// etcd's limit on the operations of one transaction branch (--max-txn-ops, 128 by default).
inline constexpr std::size_t kMaxTxnOps = 128;

}  // namespace ptrun::etcd
