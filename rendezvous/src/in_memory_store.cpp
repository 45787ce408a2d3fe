#include "ptrun/rendezvous/in_memory_store.hpp"

#include "counter_text.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t counter_of(std::string_view key, std::string_view text) {
    auto value = detail::parse_counter(text);
    if (!value) {
        throw StoreError("add: value of key " + describe_keys({std::string(key)}) +
                         " is not a decimal integer");
    }
    return *value;
}

}  // namespace

bool InMemoryStore::exists_locked(const std::string& key) const {
    if (values_.count(key) != 0) return true;
    auto q = queues_.find(key);
    return q != queues_.end() && !q->second.empty();
}

void InMemoryStore::wait_locked(std::unique_lock<std::mutex>& lock,
                                const std::vector<std::string>& keys, Duration timeout,
                                std::string_view operation) {
    const auto start = Clock::now();
    auto all_exist = [&] {
        for (const auto& k : keys) {
            if (!exists_locked(k)) return false;
        }
        return true;
    };
    if (!changed_.wait_until(lock, start + timeout, all_exist)) {
        throw StoreTimeout(operation, keys,
                           std::chrono::duration_cast<Duration>(Clock::now() - start));
    }
}

void InMemoryStore::set(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(mu_);
        values_.insert_or_assign(std::string(key), std::string(value));
    }
    changed_.notify_all();
}

std::string InMemoryStore::get(std::string_view key, Duration timeout) {
    std::unique_lock lock(mu_);
    const std::string k(key);
    wait_locked(lock, {k}, timeout, "get");
    auto it = values_.find(k);
    return it == values_.end() ? std::string() : it->second;  // a queue name has no value
}

std::int64_t InMemoryStore::add(std::string_view key, std::int64_t delta) {
    std::int64_t result = 0;
    {
        std::lock_guard lock(mu_);
        auto it = values_.find(key);
        const std::int64_t current = it == values_.end() ? 0 : counter_of(key, it->second);
        if (__builtin_add_overflow(current, delta, &result)) {
            throw StoreError("add: counter at key " + describe_keys({std::string(key)}) +
                             " would overflow");
        }
        values_.insert_or_assign(std::string(key), std::to_string(result));
    }
    changed_.notify_all();
    return result;
}

std::string InMemoryStore::compare_set(std::string_view key, std::string_view expected,
                                       std::string_view desired) {
    std::string result;
    {
        std::lock_guard lock(mu_);
        auto it = values_.find(key);
        if (it == values_.end()) {
            if (!expected.empty()) return std::string(expected);
            values_.emplace(std::string(key), std::string(desired));
            result = desired;
        } else if (it->second == expected) {
            it->second = desired;
            result = desired;
        } else {
            return it->second;
        }
    }
    changed_.notify_all();
    return result;
}

bool InMemoryStore::check(const std::vector<std::string>& keys) {
    std::lock_guard lock(mu_);
    for (const auto& k : keys) {
        if (!exists_locked(k)) return false;
    }
    return true;
}

void InMemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
    std::unique_lock lock(mu_);
    wait_locked(lock, keys, timeout, "wait");
}

bool InMemoryStore::delete_key(std::string_view key) {
    std::lock_guard lock(mu_);
    auto it = values_.find(key);
    if (it == values_.end()) return false;
    values_.erase(it);
    return true;
}

std::int64_t InMemoryStore::num_keys() {
    std::lock_guard lock(mu_);
    return static_cast<std::int64_t>(values_.size());
}

void InMemoryStore::append(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(mu_);
        values_[std::string(key)].append(value);
    }
    changed_.notify_all();
}

std::vector<std::string> InMemoryStore::multi_get(const std::vector<std::string>& keys,
                                                  Duration timeout) {
    std::unique_lock lock(mu_);
    wait_locked(lock, keys, timeout, "multi_get");
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
        auto it = values_.find(k);
        out.push_back(it == values_.end() ? std::string() : it->second);
    }
    return out;
}

void InMemoryStore::multi_set(const std::vector<std::string>& keys,
                              const std::vector<std::string>& values) {
    if (keys.size() != values.size()) {
        throw StoreError("multi_set: " + std::to_string(keys.size()) + " keys but " +
                         std::to_string(values.size()) + " values");
    }
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < keys.size(); ++i) values_.insert_or_assign(keys[i], values[i]);
    }
    changed_.notify_all();
}

void InMemoryStore::queue_push(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(mu_);
        queues_[std::string(key)].emplace_back(value);
    }
    changed_.notify_all();
}

std::string InMemoryStore::queue_pop(std::string_view key, Duration timeout) {
    std::unique_lock lock(mu_);
    const std::string k(key);
    const auto start = Clock::now();
    auto non_empty = [&] {
        auto q = queues_.find(k);
        return q != queues_.end() && !q->second.empty();
    };
    if (!changed_.wait_until(lock, start + timeout, non_empty)) {
        throw StoreTimeout("queue_pop", {k},
                           std::chrono::duration_cast<Duration>(Clock::now() - start));
    }
    auto q = queues_.find(k);
    std::string front = std::move(q->second.front());
    q->second.pop_front();
    if (q->second.empty()) queues_.erase(q);
    return front;
}

std::int64_t InMemoryStore::queue_len(std::string_view key) {
    std::lock_guard lock(mu_);
    auto q = queues_.find(key);
    return q == queues_.end() ? 0 : static_cast<std::int64_t>(q->second.size());
}

std::vector<std::string> InMemoryStore::list_keys() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    out.reserve(values_.size());
    for (const auto& kv : values_) out.push_back(kv.first);
    return out;
}

void InMemoryStore::clear() {
    std::lock_guard lock(mu_);
    values_.clear();
    queues_.clear();
}

}  // namespace ptrun::rdzv
