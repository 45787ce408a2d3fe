// EtcdStore's queues: queue K's items are the keys <root>K/q/<32 hex digits>, popped in creation
// order; and the listing of the store's keys, which leaves the items out.
#include <algorithm>
#include <cstdio>
#include <random>

#include "ptrun/etcd/etcd_store.hpp"
#include "store_impl.hpp"

namespace ptrun::etcd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kQueueMark = "/q/";
constexpr std::size_t kSuffixDigits = 32;
/// Items popped by one transaction: one compare each, and etcd allows kMaxTxnOps compares
/// (less the fence's).
constexpr std::size_t kMaxPop = kMaxTxnOps - 1;

std::string hex16(std::uint64_t v) {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(v));
    return out;
}

}  // namespace

std::string random_tag() {
    std::random_device device;
    const std::uint64_t v = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    return hex16(v);
}

std::string EtcdStore::Impl::item_suffix() { return store_tag + hex16(pushed.fetch_add(1)); }

bool EtcdStore::Impl::is_item_of(std::string_view prefix, std::string_view key) {
    return key.size() == prefix.size() + kSuffixDigits && key.substr(0, prefix.size()) == prefix &&
           is_queue_item(key.substr(key.size() - kSuffixDigits - kQueueMark.size()));
}

bool EtcdStore::Impl::is_queue_item(std::string_view key) {
    if (key.size() < kQueueMark.size() + kSuffixDigits) return false;
    const auto suffix = key.substr(key.size() - kSuffixDigits);
    const auto mark = key.substr(key.size() - kSuffixDigits - kQueueMark.size(), kQueueMark.size());
    return mark == kQueueMark && std::all_of(suffix.begin(), suffix.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::vector<std::string> EtcdStore::Impl::keys() {
    // An empty root is the whole key space (etcd spells it "\0" to "\0").
    auto all = Op::range(options.root.empty() ? std::string(1, '\0') : options.root,
                         prefix_end(options.root), 0, /*keys_only=*/true);
    auto r = client.txn({}, {std::move(all)});
    std::vector<std::string> out;
    if (r.ranges.empty()) return out;
    for (auto& kv : r.ranges.front()) {
        auto key = kv.key.substr(std::min(kv.key.size(), options.root.size()));
        if (!is_queue_item(key)) out.push_back(std::move(key));
    }
    return out;
}

std::vector<std::string> EtcdStore::Impl::pop(std::string_view operation, std::string_view key,
                                              std::size_t max, rdzv::Duration timeout) {
    const std::size_t want = std::clamp<std::size_t>(max, 1, kMaxPop);
    const auto prefix = queue_prefix(key);
    const auto end = prefix_end(prefix);
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    auto items_of = [&](std::vector<KeyValue> kvs) {
        std::vector<KeyValue> out;
        for (auto& kv : kvs) {
            if (out.size() < want && is_item_of(prefix, kv.key)) {
                out.push_back(std::move(kv));
            }
        }
        return out;
    };
    for (;;) {
        auto r = client.range(prefix, end, static_cast<std::int64_t>(want), /*by_creation=*/true);
        auto items = items_of(r.kvs);
        if (items.size() < r.kvs.size() && static_cast<std::int64_t>(r.kvs.size()) < r.count) {
            // Keys of nested queues took some of the places: read them all.
            r = client.range(prefix, end, 0, /*by_creation=*/true);
            items = items_of(std::move(r.kvs));
        }
        if (items.empty()) {
            const auto left = std::chrono::duration_cast<rdzv::Duration>(deadline - Clock::now());
            if (left.count() <= 0) {
                throw rdzv::StoreTimeout(
                    operation, {std::string(key)},
                    std::chrono::duration_cast<rdzv::Duration>(Clock::now() - start));
            }
            // From where the watch is set up (served at once); an item pushed since the read
            // ends it, and the loop reads again.
            client.watch(prefix, end, r.revision + 1, left, [&] {
                return !items_of(client.range(prefix, end, 0, /*by_creation=*/true).kvs).empty();
            });
            continue;
        }
        std::vector<Compare> compares;
        std::vector<Op> deletes;
        for (const auto& item : items) {
            compares.push_back(Compare::equal(item.key, Compare::Target::Mod, item.mod_revision));
            deletes.push_back(Op::remove(item.key));
        }
        if (fenced(operation, std::move(compares), std::move(deletes)).succeeded) {
            std::vector<std::string> out;
            out.reserve(items.size());
            for (auto& item : items) out.push_back(std::move(item.value));
            return out;
        }
        // Another consumer took some of them first: try again while there is time.
        if (Clock::now() >= deadline) return {};
    }
}

void EtcdStore::queue_push(std::string_view key, std::string_view value) {
    const auto item = impl_->queue_prefix(key) + impl_->item_suffix();
    if (!impl_->options.fence) {
        impl_->client.put(item, std::string(value));
        return;
    }
    impl_->fenced("queue_push", {}, {Op::put(item, std::string(value))});
}

void EtcdStore::queue_push_many(std::string_view key, const std::vector<std::string>& values) {
    if (values.size() == 1 && !impl_->options.fence) {  // a put costs etcd less than a txn
        queue_push(key, values.front());
        return;
    }
    for (std::size_t begin = 0; begin < values.size(); begin += kMaxTxnOps - 1) {
        const std::size_t end = std::min(values.size(), begin + kMaxTxnOps - 1);  // + the fence
        std::vector<Op> puts;
        for (std::size_t i = begin; i < end; ++i) {
            puts.push_back(Op::put(impl_->queue_prefix(key) + impl_->item_suffix(), values[i]));
        }
        impl_->fenced("queue_push_many", {}, std::move(puts));
    }
}

std::string EtcdStore::queue_pop(std::string_view key, rdzv::Duration timeout) {
    const auto start = Clock::now();
    auto items = impl_->pop("queue_pop", key, 1, timeout);
    if (items.empty()) {  // lost every race for an item until the deadline
        throw rdzv::StoreTimeout("queue_pop", {std::string(key)},
                                 std::chrono::duration_cast<rdzv::Duration>(Clock::now() - start));
    }
    return std::move(items.front());
}

std::vector<std::string> EtcdStore::queue_pop_batch(std::string_view key, std::size_t max,
                                                    rdzv::Duration timeout) {
    return impl_->pop("queue_pop_batch", key, max, timeout);
}

std::int64_t EtcdStore::queue_len(std::string_view key) {
    const auto prefix = impl_->queue_prefix(key);
    auto r = impl_->client.txn({}, {Op::range(prefix, prefix_end(prefix), 0, /*keys_only=*/true)});
    if (r.ranges.empty()) return 0;
    return std::count_if(r.ranges.front().begin(), r.ranges.front().end(),
                         [&](const KeyValue& kv) { return Impl::is_item_of(prefix, kv.key); });
}

}  // namespace ptrun::etcd
