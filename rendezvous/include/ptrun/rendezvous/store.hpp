#pragma once
/// The c10d store verbs as an interface: TcpStoreClient, InMemoryStore and PrefixStore implement
/// it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::rdzv {

using Duration = std::chrono::milliseconds;

/// c10d's default store timeout (300 s), for callers without a better value.
inline constexpr Duration kDefaultTimeout{300'000};

/// A key/value store shared by the ranks of a job. Keys and values are arbitrary bytes.
/// Blocking calls take a timeout and throw StoreTimeout naming the keys; transport failures
/// (and calls after interrupt()) throw ConnectionLost; everything else StoreError.
/// Implementations are thread-safe.
class Store {
  public:
    virtual ~Store() = default;

    /// Stores `value` under `key` (replacing it) and wakes waiters on `key`. Does not block.
    virtual void set(std::string_view key, std::string_view value) = 0;
    /// Value of `key`; blocks until the key exists, at most `timeout` (then StoreTimeout).
    virtual std::string get(std::string_view key, Duration timeout) = 0;
    /// Adds `delta` to the decimal counter at `key` (absent = 0) and returns the new value;
    /// throws StoreError if the current value is not a decimal integer.
    virtual std::int64_t add(std::string_view key, std::int64_t delta) = 0;
    /// Sets `key` to `desired` if its value is `expected` (absent matches only an empty
    /// `expected`); returns the value now stored, or `expected` if the key is absent.
    virtual std::string compare_set(std::string_view key, std::string_view expected,
                                    std::string_view desired) = 0;
    /// True if every key exists (an empty list is true). Does not block.
    virtual bool check(const std::vector<std::string>& keys) = 0;
    /// Blocks until every key exists, at most `timeout` (then StoreTimeout naming the keys).
    virtual void wait(const std::vector<std::string>& keys, Duration timeout) = 0;
    /// Erases `key`; true if it existed. Does not wake waiters.
    virtual bool delete_key(std::string_view key) = 0;
    /// Number of keys in the whole store (queues not counted).
    virtual std::int64_t num_keys() = 0;
    /// Appends `value` to the value at `key`, creating it if absent; wakes waiters.
    virtual void append(std::string_view key, std::string_view value) = 0;
    /// Values of `keys` in order; blocks until all exist, at most `timeout` (then StoreTimeout).
    virtual std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                               Duration timeout) = 0;
    /// The values of `keys` now, nullopt for each one absent. Does not block. The default makes
    /// one compare_set per key with an expectation no caller stores, which writes nothing:
    /// c10d's COMPARE_SET answers the current value, or the expectation when the key is absent
    /// (torch 2.x's libuv server also wakes the key's waiters then: peek keys nobody waits on
    /// there). Stores that read several keys in one request (etcd) override it.
    virtual std::vector<std::optional<std::string>> peek(const std::vector<std::string>& keys);
    /// Sets keys[i] = values[i] for all i; throws StoreError if the sizes differ.
    virtual void multi_set(const std::vector<std::string>& keys,
                           const std::vector<std::string>& values) = 0;
    /// Pushes `value` onto the FIFO queue `key` and wakes one waiter on it.
    virtual void queue_push(std::string_view key, std::string_view value) = 0;
    /// Pushes each of `values` onto queue `key`, in order. The default pushes them one by one;
    /// stores that write several in one request (etcd) override it.
    virtual void queue_push_many(std::string_view key, const std::vector<std::string>& values);
    /// Pops the front of queue `key`; blocks while it is empty, at most `timeout` (StoreTimeout).
    virtual std::string queue_pop(std::string_view key, Duration timeout) = 0;
    /// Length of queue `key` (0 if it never existed). Does not block.
    virtual std::int64_t queue_len(std::string_view key) = 0;
    /// Blocks until queue `key` is not empty (at most `timeout`, then StoreTimeout), then pops
    /// up to `max` (at least 1) elements and returns them in queue order; empty if another
    /// consumer won them.
    virtual std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                                     Duration timeout) = 0;
    /// Every key in the store, in no particular order. A debugging aid; does not block.
    virtual std::vector<std::string> list_keys() = 0;
    /// From any thread: a call blocked on this object fails at once with ConnectionLost, and so
    /// does every later call. For stopping the thread that owns this object.
    virtual void interrupt() noexcept = 0;
    /// True when wake() cuts waits short here; false (the default) where it does nothing. Ask
    /// before the waits begin: an implementation may prepare for wake() then.
    virtual bool wakeable() const noexcept { return false; }
    /// From any thread: the blocking wait in progress on this object (get, wait, multi_get,
    /// queue_pop, queue_pop_batch, barrier), or else the next one, ends at once with StoreWoken
    /// (a StoreTimeout); the object stays usable. Lets threads that share one connection
    /// put a short call before a long wait. A no-op unless wakeable().
    virtual void wake() noexcept {}
};

}  // namespace ptrun::rdzv
