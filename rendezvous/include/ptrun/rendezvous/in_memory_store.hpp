#pragma once
/// InMemoryStore: a thread-safe Store inside one process, for tests and single-process use.

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

/// Same semantics as the TCP store (counters as decimal text, compare_set table, FIFO queues).
/// Blocking calls sleep on a condition variable that every write notifies; nothing polls.
class InMemoryStore final : public Store {
  public:
    InMemoryStore() = default;

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
    std::vector<std::string> list_keys() override;

    /// Erases every key and queue (a fresh namespace). Does not block beyond the lock.
    void clear();

  private:
    bool exists_locked(const std::string& key) const;
    /// Waits on cv_ until every key exists; throws StoreTimeout(operation) after `timeout`.
    void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                     Duration timeout, std::string_view operation);

    std::mutex mu_;
    std::condition_variable changed_;
    std::map<std::string, std::string, std::less<>> values_;
    std::map<std::string, std::deque<std::string>, std::less<>> queues_;
};

}  // namespace ptrun::rdzv
