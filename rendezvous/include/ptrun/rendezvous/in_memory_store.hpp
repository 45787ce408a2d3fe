#pragma once
/// InMemoryStore: a thread-safe Store inside one process, for tests and single-process use.

#include <memory>
#include <mutex>
#include <string>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

/// Same semantics as the TCP store (counters as decimal text, compare_set table, FIFO queues).
/// Blocking calls sleep on a condition variable that every write notifies; nothing polls.
/// connect() hands out more handles on the same data, each with its own interrupt(), as more
/// TCP clients of one server would be.
class InMemoryStore final : public Store {
  public:
    /// An empty store. Does not block or throw (beyond allocation).
    InMemoryStore();
    ~InMemoryStore() override;
    InMemoryStore(const InMemoryStore&) = delete;
    InMemoryStore& operator=(const InMemoryStore&) = delete;

    void set(std::string_view key, std::string_view value) override;
    std::string get(std::string_view key, Duration timeout) override;
    std::int64_t add(std::string_view key, std::int64_t delta) override;
    std::string compare_set(std::string_view key, std::string_view expected,
                            std::string_view desired) override;
    bool check(const std::vector<std::string>& keys) override;
    void wait(const std::vector<std::string>& keys, Duration timeout) override;
    bool delete_key(std::string_view key) override;
    std::int64_t num_keys() override;
    void append(std::string_view key, std::string_view value) override;
    std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                       Duration timeout) override;
    void multi_set(const std::vector<std::string>& keys,
                   const std::vector<std::string>& values) override;
    void queue_push(std::string_view key, std::string_view value) override;
    std::string queue_pop(std::string_view key, Duration timeout) override;
    std::int64_t queue_len(std::string_view key) override;
    /// Waits like queue_pop, then takes up to `max` (at least 1) elements at once.
    std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                             Duration timeout) override;
    std::vector<std::string> list_keys() override;
    /// Fails this handle's blocked and later calls with ConnectionLost; other handles on the
    /// same data are unaffected.
    void interrupt() noexcept override;
    /// This handle's waits can be cut short (Store::wake).
    bool wakeable() const noexcept override { return true; }
    void wake() noexcept override;

    /// A new handle on this store's data with its own interrupt(); it keeps the data alive.
    std::unique_ptr<InMemoryStore> connect();
    /// Erases every key and queue (a fresh namespace). Does not block beyond the lock.
    void clear();

  private:
    struct Data;
    explicit InMemoryStore(std::shared_ptr<Data> data);
    /// Under data_->mu: throws ConnectionLost naming `operation` once interrupt() was called.
    void check_live_locked(std::string_view operation) const;
    /// Waits until `ready()` (checked under the lock); StoreTimeout naming `keys` after
    /// `timeout`, ConnectionLost on interrupt.
    template <class Ready>
    void wait_until_locked(std::unique_lock<std::mutex>& lock, Ready ready,
                           const std::vector<std::string>& keys, Duration timeout,
                           std::string_view operation);
    /// Waits until every key exists, with wait_until_locked's errors.
    void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                     Duration timeout, std::string_view operation);
    /// Waits until queue `key` is not empty, then takes up to `max` (at least 1) elements.
    std::vector<std::string> pop_locked(std::unique_lock<std::mutex>& lock, std::string_view key,
                                        std::size_t max, Duration timeout,
                                        std::string_view operation);

    std::shared_ptr<Data> data_;
    bool interrupted_ = false;  ///< guarded by data_->mu
    bool woken_ = false;        ///< guarded by data_->mu: the current or next wait ends
};

}  // namespace ptrun::rdzv
