#include "ptrun/rendezvous/in_memory_store.hpp"

#include <utility>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>

#include "ptrun/rendezvous/counter_text.hpp"
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

/// What every handle of one store shares.
struct InMemoryStore::Data {
    std::mutex mu;
    std::condition_variable changed;  ///< every write and every interrupt() notifies it
    std::map<std::string, std::string, std::less<>> values;
    std::map<std::string, std::deque<std::string>, std::less<>> queues;

    bool exists_locked(const std::string& key) const {
        if (values.count(key) != 0) return true;
        auto q = queues.find(key);
        return q != queues.end() && !q->second.empty();
    }
};

InMemoryStore::InMemoryStore() : data_(std::make_shared<Data>()) {}
InMemoryStore::InMemoryStore(std::shared_ptr<Data> data) : data_(std::move(data)) {}
InMemoryStore::~InMemoryStore() = default;

std::unique_ptr<InMemoryStore> InMemoryStore::connect() {
    return std::unique_ptr<InMemoryStore>(new InMemoryStore(data_));
}

void InMemoryStore::interrupt() noexcept {
    {
        std::lock_guard lock(data_->mu);
        interrupted_ = true;
    }
    data_->changed.notify_all();
}

void InMemoryStore::wake() noexcept {
    {
        std::lock_guard lock(data_->mu);
        woken_ = true;
    }
    data_->changed.notify_all();
}

void InMemoryStore::check_live_locked(std::string_view operation) const {
    if (interrupted_) throw ConnectionLost(std::string(operation) + ": store handle interrupted");
}

template <class Ready>
void InMemoryStore::wait_until_locked(std::unique_lock<std::mutex>& lock, Ready ready,
                                      const std::vector<std::string>& keys, Duration timeout,
                                      std::string_view operation) {
    const auto start = Clock::now();
    const bool done = data_->changed.wait_until(lock, start + timeout,
                                                [&] { return interrupted_ || woken_ || ready(); });
    check_live_locked(operation);
    if (!done || !ready()) {  // its time is up, or wake() cut it short
        const auto waited = std::chrono::duration_cast<Duration>(Clock::now() - start);
        if (std::exchange(woken_, false) && done) throw StoreWoken(operation, keys, waited);
        throw StoreTimeout(operation, keys, waited);
    }
}

void InMemoryStore::wait_locked(std::unique_lock<std::mutex>& lock,
                                const std::vector<std::string>& keys, Duration timeout,
                                std::string_view operation) {
    auto all_exist = [&] {
        for (const auto& k : keys) {
            if (!data_->exists_locked(k)) return false;
        }
        return true;
    };
    wait_until_locked(lock, all_exist, keys, timeout, operation);
}

std::vector<std::string> InMemoryStore::pop_locked(std::unique_lock<std::mutex>& lock,
                                                   std::string_view key, std::size_t max,
                                                   Duration timeout, std::string_view operation) {
    check_live_locked(operation);
    const std::string k(key);
    auto non_empty = [&] {
        auto q = data_->queues.find(k);
        return q != data_->queues.end() && !q->second.empty();
    };
    wait_until_locked(lock, non_empty, {k}, timeout, operation);
    auto q = data_->queues.find(k);
    const std::size_t count = std::min(q->second.size(), std::max<std::size_t>(max, 1));
    std::vector<std::string> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        out.push_back(std::move(q->second.front()));
        q->second.pop_front();
    }
    if (q->second.empty()) data_->queues.erase(q);
    return out;
}

void InMemoryStore::set(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(data_->mu);
        check_live_locked("set");
        data_->values.insert_or_assign(std::string(key), std::string(value));
    }
    data_->changed.notify_all();
}

std::string InMemoryStore::get(std::string_view key, Duration timeout) {
    std::unique_lock lock(data_->mu);
    check_live_locked("get");
    const std::string k(key);
    wait_locked(lock, {k}, timeout, "get");
    auto it = data_->values.find(k);
    return it == data_->values.end() ? std::string() : it->second;  // a queue name has no value
}

std::int64_t InMemoryStore::add(std::string_view key, std::int64_t delta) {
    std::int64_t result = 0;
    {
        std::lock_guard lock(data_->mu);
        check_live_locked("add");
        auto it = data_->values.find(key);
        const std::int64_t current = it == data_->values.end() ? 0 : counter_of(key, it->second);
        if (__builtin_add_overflow(current, delta, &result)) {
            throw StoreError("add: counter at key " + describe_keys({std::string(key)}) +
                             " would overflow");
        }
        data_->values.insert_or_assign(std::string(key), std::to_string(result));
    }
    data_->changed.notify_all();
    return result;
}

std::string InMemoryStore::compare_set(std::string_view key, std::string_view expected,
                                       std::string_view desired) {
    std::string result;
    {
        std::lock_guard lock(data_->mu);
        check_live_locked("compare_set");
        auto it = data_->values.find(key);
        if (it == data_->values.end()) {
            if (!expected.empty()) return std::string(expected);
            data_->values.emplace(std::string(key), std::string(desired));
            result = desired;
        } else if (it->second == expected) {
            it->second = desired;
            result = desired;
        } else {
            return it->second;
        }
    }
    data_->changed.notify_all();
    return result;
}

bool InMemoryStore::check(const std::vector<std::string>& keys) {
    std::lock_guard lock(data_->mu);
    check_live_locked("check");
    for (const auto& k : keys) {
        if (!data_->exists_locked(k)) return false;
    }
    return true;
}

void InMemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
    std::unique_lock lock(data_->mu);
    check_live_locked("wait");
    wait_locked(lock, keys, timeout, "wait");
}

bool InMemoryStore::delete_key(std::string_view key) {
    std::lock_guard lock(data_->mu);
    check_live_locked("delete_key");
    auto it = data_->values.find(key);
    if (it == data_->values.end()) return false;
    data_->values.erase(it);
    return true;
}

std::int64_t InMemoryStore::num_keys() {
    std::lock_guard lock(data_->mu);
    check_live_locked("num_keys");
    return static_cast<std::int64_t>(data_->values.size());
}

void InMemoryStore::append(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(data_->mu);
        check_live_locked("append");
        data_->values[std::string(key)].append(value);
    }
    data_->changed.notify_all();
}

std::vector<std::string> InMemoryStore::multi_get(const std::vector<std::string>& keys,
                                                  Duration timeout) {
    std::unique_lock lock(data_->mu);
    check_live_locked("multi_get");
    wait_locked(lock, keys, timeout, "multi_get");
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
        auto it = data_->values.find(k);
        out.push_back(it == data_->values.end() ? std::string() : it->second);
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
        std::lock_guard lock(data_->mu);
        check_live_locked("multi_set");
        for (std::size_t i = 0; i < keys.size(); ++i) {
            data_->values.insert_or_assign(keys[i], values[i]);
        }
    }
    data_->changed.notify_all();
}

void InMemoryStore::queue_push(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(data_->mu);
        check_live_locked("queue_push");
        data_->queues[std::string(key)].emplace_back(value);
    }
    data_->changed.notify_all();
}

std::string InMemoryStore::queue_pop(std::string_view key, Duration timeout) {
    std::unique_lock lock(data_->mu);
    return std::move(pop_locked(lock, key, 1, timeout, "queue_pop").front());
}

std::vector<std::string> InMemoryStore::queue_pop_batch(std::string_view key, std::size_t max,
                                                        Duration timeout) {
    std::unique_lock lock(data_->mu);
    return pop_locked(lock, key, max, timeout, "queue_pop_batch");
}

std::int64_t InMemoryStore::queue_len(std::string_view key) {
    std::lock_guard lock(data_->mu);
    check_live_locked("queue_len");
    auto q = data_->queues.find(key);
    return q == data_->queues.end() ? 0 : static_cast<std::int64_t>(q->second.size());
}

std::vector<std::string> InMemoryStore::list_keys() {
    std::lock_guard lock(data_->mu);
    check_live_locked("list_keys");
    std::vector<std::string> out;
    out.reserve(data_->values.size());
    for (const auto& kv : data_->values) out.push_back(kv.first);
    return out;
}

void InMemoryStore::clear() {
    std::lock_guard lock(data_->mu);
    data_->values.clear();
    data_->queues.clear();
}

}  // namespace ptrun::rdzv
