#pragma once
/// PrefixStore: namespaces every key of an inner store (torch's "prefix/key" rule).

#include <string>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

/// Decorator mapping key `k` to `prefix + "/" + k` on `inner` (layers compose, like torch's
/// PrefixStore). `inner` must outlive this object. num_keys() counts the whole inner store;
/// list_keys() returns only this prefix's keys, with the prefix stripped.
class PrefixStore final : public Store {
  public:
    /// Does not block or throw.
    PrefixStore(std::string prefix, Store& inner);

    /// The inner key for `key`: prefix + "/" + key.
    std::string full_key(std::string_view key) const;
    const std::string& prefix() const noexcept { return prefix_; }

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
    std::vector<std::optional<std::string>> peek(const std::vector<std::string>& keys) override;
    void queue_push_many(std::string_view key, const std::vector<std::string>& values) override;
    void multi_set(const std::vector<std::string>& keys,
                   const std::vector<std::string>& values) override;
    void queue_push(std::string_view key, std::string_view value) override;
    std::string queue_pop(std::string_view key, Duration timeout) override;
    std::int64_t queue_len(std::string_view key) override;
    std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                             Duration timeout) override;
    std::vector<std::string> list_keys() override;
    /// Interrupts the inner store, and with it every other user of that store.
    void interrupt() noexcept override;
    bool wakeable() const noexcept override { return inner_.wakeable(); }
    void wake() noexcept override { inner_.wake(); }

  private:
    std::vector<std::string> full_keys(const std::vector<std::string>& keys) const;

    std::string prefix_;
    Store& inner_;
};

}  // namespace ptrun::rdzv
