#pragma once
/// The c10d store verbs (rdzv::Store) over etcd, for the rendezvous's etcd backend: every key
/// lives under a root prefix; blocking calls watch instead of polling; queues are keys under
/// `<key>/q/` popped in creation order. With a fence, every write is a transaction that succeeds
/// only while the fence key still has the given create revision (the leader's key): a deposed
/// coordinator's writes fail with FenceLost instead of landing.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ptrun/etcd/client.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::etcd {

/// A fenced write found the fence key gone or re-created.
class FenceLost : public rdzv::StoreError {
  public:
    using rdzv::StoreError::StoreError;
};

struct Fence {
    std::string key;  ///< full etcd key (not under the root)
    std::int64_t create_revision = 0;
};

struct EtcdStoreOptions {
    ClientOptions client;
    std::string root;  ///< prefix of every key; "" = the keys are etcd keys as given
    std::optional<Fence> fence;
};

class EtcdStore final : public rdzv::Store {
  public:
    explicit EtcdStore(EtcdStoreOptions options);
    ~EtcdStore() override;

    void set(std::string_view key, std::string_view value) override;
    std::string get(std::string_view key, rdzv::Duration timeout) override;
    std::int64_t add(std::string_view key, std::int64_t delta) override;
    std::string compare_set(std::string_view key, std::string_view expected,
                            std::string_view desired) override;
    bool check(const std::vector<std::string>& keys) override;
    void wait(const std::vector<std::string>& keys, rdzv::Duration timeout) override;
    bool delete_key(std::string_view key) override;
    std::int64_t num_keys() override;
    void append(std::string_view key, std::string_view value) override;
    std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                       rdzv::Duration timeout) override;
    /// One read-only transaction for the keys (a compare_set would be a write through raft).
    std::vector<std::optional<std::string>> peek(const std::vector<std::string>& keys) override;
    /// One transaction for up to 127 items (fenced: with the fence's compare); one item alone
    /// unfenced: a put.
    void queue_push_many(std::string_view key, const std::vector<std::string>& values) override;
    void multi_set(const std::vector<std::string>& keys,
                   const std::vector<std::string>& values) override;
    void queue_push(std::string_view key, std::string_view value) override;
    std::string queue_pop(std::string_view key, rdzv::Duration timeout) override;
    std::int64_t queue_len(std::string_view key) override;
    std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                             rdzv::Duration timeout) override;
    std::vector<std::string> list_keys() override;
    void interrupt() noexcept override;

    /// The client underneath (leader election uses its leases and watches).
    Client& client();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::etcd
