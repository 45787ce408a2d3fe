#include "ptrun/etcd/etcd_store.hpp"

#include <algorithm>
#include <unordered_map>

#include "ptrun/rendezvous/counter_text.hpp"
#include "store_impl.hpp"

namespace ptrun::etcd {
namespace {

using Clock = std::chrono::steady_clock;
using Keys = std::vector<std::string>;

rdzv::Duration since(Clock::time_point start) {
    return std::chrono::duration_cast<rdzv::Duration>(Clock::now() - start);
}

/// The key `kv` is unchanged since it was read (or still absent when it was absent).
Compare unchanged(const std::string& key, const std::optional<KeyValue>& kv) {
    return kv ? Compare::equal(key, Compare::Target::Mod, kv->mod_revision)
              : Compare::equal(key, Compare::Target::Version, 0);
}

std::optional<KeyValue> first(const std::vector<KeyValue>& kvs) {
    if (kvs.empty()) return std::nullopt;
    return kvs.front();
}

/// The counter text as rdzv's stores read it (parse_counter); StoreError naming the key otherwise.
std::int64_t counter_of(std::string_view key, std::string_view text) {
    if (auto value = rdzv::detail::parse_counter(text)) return *value;
    throw rdzv::StoreError("add: value of key " + rdzv::describe_keys({std::string(key)}) +
                           " is not a decimal integer");
}

}  // namespace

// ---- shared steps -----------------------------------------------------------------------------

EtcdStore::Impl::Impl(EtcdStoreOptions o) : options(std::move(o)), client(options.client) {
    if (options.fence && options.fence->key.empty()) {
        throw rdzv::StoreError("EtcdStore: the fence key is empty");
    }
    store_tag = random_tag();
}

TxnResult EtcdStore::Impl::fenced(std::string_view operation, std::vector<Compare> compares,
                                  std::vector<Op> success, std::vector<Op> failure) {
    if (!options.fence) return client.txn(compares, success, failure);
    const auto& fence = *options.fence;
    compares.push_back(Compare::equal(fence.key, Compare::Target::Create, fence.create_revision));
    failure.push_back(Op::range(fence.key, "", 0, /*keys_only=*/true));
    auto result = client.txn(compares, success, failure);
    if (result.succeeded || result.ranges.empty()) return result;
    const auto& now = result.ranges.back();
    if (now.empty() || now.front().create_revision != fence.create_revision) {
        throw FenceLost(
            std::string(operation) + ": this node no longer leads: fence key " +
            rdzv::describe_keys({fence.key}) +
            (now.empty()
                 ? " is gone"
                 : " was re-created at revision " + std::to_string(now.front().create_revision)) +
            " (expected create revision " + std::to_string(fence.create_revision) + ")");
    }
    result.ranges.pop_back();
    return result;
}

bool EtcdStore::Impl::Presence::all() const {
    return std::all_of(values.begin(), values.end(), [](const auto& v) { return v.has_value(); });
}

EtcdStore::Impl::Presence EtcdStore::Impl::read(const Keys& keys) {
    Presence out;
    out.values.resize(keys.size());
    constexpr std::size_t kPerTxn = kMaxTxnOps / 2;  // a key's value and its queue's first item
    for (std::size_t begin = 0; begin < keys.size(); begin += kPerTxn) {
        const std::size_t end = std::min(keys.size(), begin + kPerTxn);
        std::vector<Op> ops;
        for (std::size_t i = begin; i < end; ++i) {
            ops.push_back(Op::range(full(keys[i])));
            const auto q = queue_prefix(keys[i]);
            ops.push_back(Op::range(q, prefix_end(q), 1, /*keys_only=*/true));
        }
        const auto r = client.txn({}, ops);
        if (r.ranges.size() != ops.size()) {
            throw rdzv::StoreError("etcd answered " + std::to_string(r.ranges.size()) +
                                   " reads to a txn of " + std::to_string(ops.size()));
        }
        out.revision = out.revision == 0 ? r.revision : std::min(out.revision, r.revision);
        for (std::size_t i = begin; i < end; ++i) {
            const auto& value = r.ranges[2 * (i - begin)];
            const auto& queue = r.ranges[2 * (i - begin) + 1];
            if (!value.empty()) {
                out.values[i] = value.front().value;
            } else if (std::any_of(queue.begin(), queue.end(), [&](const KeyValue& kv) {
                           return is_item_of(queue_prefix(keys[i]), kv.key);
                       })) {
                out.values[i] = std::string();
            }
        }
    }
    return out;
}

EtcdStore::Impl::Presence EtcdStore::Impl::wait(std::string_view operation, const Keys& keys,
                                                rdzv::Duration timeout) {
    const auto start = Clock::now();
    std::unordered_map<std::string, std::size_t> index;  // full key -> its place in `keys`
    bool watch_first = false;
    {
        std::lock_guard lock(missed_mu);
        watch_first = !keys.empty() && missed == keys;
    }
    const auto timed_out = [&] {
        {
            std::lock_guard lock(missed_mu);
            missed = keys;
        }
        return rdzv::StoreTimeout(operation, keys, since(start));
    };
    for (;;) {
        Presence presence;
        auto left = std::chrono::ceil<rdzv::Duration>(start + timeout - Clock::now());
        if (watch_first && left.count() > 0) {  // nothing known: the watch's catch-up reads all
            presence.values.resize(keys.size());
        } else {
            presence = read(keys);
            if (presence.all()) return presence;
            left = std::chrono::ceil<rdzv::Duration>(start + timeout - Clock::now());
        }
        watch_first = false;
        if (left.count() <= 0) throw timed_out();
        // One watch over the span of the missing keys (and their queues); any event there means
        // read again. Events after the read are not missed: the watch starts where etcd set it
        // up, and writes between the read and then are read again (the catch-up below).
        std::string low, high;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (presence.values[i]) continue;
            const auto k = full(keys[i]);
            const auto end = prefix_end(k);
            if (low.empty() || k < low) low = k;
            if (high != std::string(1, '\0') && (end == std::string(1, '\0') || end > high)) {
                high = end;
            }
        }
        if (index.empty()) {  // made once a wait must watch, not for keys there at once
            for (std::size_t i = 0; i < keys.size(); ++i) index.emplace(full(keys[i]), i);
        }
        // From where the watch is set up (served at once), reading again when a write landed
        // since the read; a wait that needs nothing more ends there.
        const auto events = client.watch(low, high, presence.revision + 1, left, [&] {
            presence = read(keys);
            return presence.all();
        });
        if (presence.all()) return presence;
        // The watch's events are the news: a missing key that was put is there now, with the
        // value the event carries, and when that completes the set no second read is needed
        // (one request fewer for every wait that had to wait). A delete undoes what it names;
        // anything else (a queue's item) is read again.
        for (const auto& event : events) {
            auto it = index.find(event.kv.key);
            if (it == index.end()) continue;
            if (event.type == WatchEvent::Type::Put) {
                presence.values[it->second] = event.kv.value;
            } else {
                presence.values[it->second].reset();
            }
        }
        if (!events.empty() && presence.all()) return presence;
        // A watch that ends with nothing ran to the deadline (watch() returns no events only
        // then, or when the catch-up completed the set): nothing came since its catch-up.
        if (events.empty()) throw timed_out();
    }
}

// ---- EtcdStore --------------------------------------------------------------------------------

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
EtcdStore::~EtcdStore() = default;

Client& EtcdStore::client() { return impl_->client; }

void EtcdStore::interrupt() noexcept { impl_->client.interrupt(); }

void EtcdStore::set(std::string_view key, std::string_view value) {
    if (!impl_->options.fence) {
        impl_->client.put(impl_->full(key), std::string(value));
        return;
    }
    impl_->fenced("set", {}, {Op::put(impl_->full(key), std::string(value))});
}

std::string EtcdStore::get(std::string_view key, rdzv::Duration timeout) {
    return std::move(*impl_->wait("get", {std::string(key)}, timeout).values.front());
}

std::optional<KeyValue> EtcdStore::Impl::counter_written(const std::string& key) {
    std::lock_guard lock(counters_mu);
    auto it = counters.find(key);
    if (it == counters.end()) return std::nullopt;
    return it->second;
}

void EtcdStore::Impl::note_counter(const std::string& key, std::int64_t value,
                                   std::int64_t revision) {
    std::lock_guard lock(counters_mu);
    if (counters.size() >= kCountersKept && !counters.count(key)) counters.clear();
    KeyValue& kv = counters[key];
    kv.key = key;
    kv.value = std::to_string(value);
    kv.mod_revision = revision;
}

std::int64_t EtcdStore::add(std::string_view key, std::int64_t delta) {
    const auto k = impl_->full(key);
    // Compared and swapped at once, without a read first, on this store's last write of the
    // counter (a heartbeat's ADD), or as absent (a new counter): one request, not two. When
    // another writer came between, the failure branch's read gives the value to try again on.
    auto current = impl_->counter_written(k);
    for (;;) {
        const std::int64_t before = current ? counter_of(key, current->value) : 0;
        std::int64_t after = 0;
        if (__builtin_add_overflow(before, delta, &after)) {
            throw rdzv::StoreError("add: counter at key " +
                                   rdzv::describe_keys({std::string(key)}) + " would overflow");
        }
        auto r = impl_->fenced("add", {unchanged(k, current)}, {Op::put(k, std::to_string(after))},
                               {Op::range(k)});
        if (r.succeeded) {
            impl_->note_counter(k, after, r.revision);
            return after;
        }
        current = first(r.ranges.front());  // another writer won: try again on what it wrote
    }
}

std::string EtcdStore::compare_set(std::string_view key, std::string_view expected,
                                   std::string_view desired) {
    const auto k = impl_->full(key);
    // First try: the value is `expected` (an empty `expected`: the key is absent). When that
    // fails, the failure branch's read decides; an empty value matching an empty `expected`
    // takes a second transaction on that exact version.
    auto c = expected.empty() ? Compare::equal(k, Compare::Target::Version, 0)
                              : Compare::value_equal(k, std::string(expected));
    for (;;) {
        auto r =
            impl_->fenced("compare_set", {c}, {Op::put(k, std::string(desired))}, {Op::range(k)});
        if (r.succeeded) return std::string(desired);
        const auto current = first(r.ranges.front());
        if (current ? current->value != expected : !expected.empty()) {
            return current ? current->value : std::string(expected);
        }
        c = unchanged(k, current);  // matches, yet changed meanwhile: again on what is there now
    }
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
    if (keys.empty()) return true;
    return impl_->read(keys).all();
}

void EtcdStore::wait(const std::vector<std::string>& keys, rdzv::Duration timeout) {
    if (keys.empty()) return;
    impl_->wait("wait", keys, timeout);
}

bool EtcdStore::delete_key(std::string_view key) {
    const auto k = impl_->full(key);
    if (!impl_->options.fence) return impl_->client.delete_range(k) > 0;
    auto r = impl_->fenced("delete_key", {}, {Op::range(k, "", 0, true), Op::remove(k)});
    return !r.ranges.front().empty();
}

std::int64_t EtcdStore::num_keys() { return static_cast<std::int64_t>(impl_->keys().size()); }

std::vector<std::string> EtcdStore::list_keys() { return impl_->keys(); }

void EtcdStore::append(std::string_view key, std::string_view value) {
    const auto k = impl_->full(key);
    auto current = first(impl_->client.range(k).kvs);
    for (;;) {
        std::string after = current ? current->value : std::string();
        after.append(value);
        auto r = impl_->fenced("append", {unchanged(k, current)}, {Op::put(k, std::move(after))},
                               {Op::range(k)});
        if (r.succeeded) return;
        current = first(r.ranges.front());
    }
}

std::vector<std::string> EtcdStore::multi_get(const std::vector<std::string>& keys,
                                              rdzv::Duration timeout) {
    if (keys.empty()) return {};
    auto presence = impl_->wait("multi_get", keys, timeout);
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (auto& v : presence.values) out.push_back(std::move(*v));
    return out;
}

std::vector<std::optional<std::string>> EtcdStore::peek(const std::vector<std::string>& keys) {
    if (keys.empty()) return {};
    return impl_->read(keys).values;
}

void EtcdStore::multi_set(const std::vector<std::string>& keys,
                          const std::vector<std::string>& values) {
    if (keys.size() != values.size()) {
        throw rdzv::StoreError("multi_set: " + std::to_string(keys.size()) + " keys but " +
                               std::to_string(values.size()) + " values");
    }
    // One transaction per kMaxTxnOps keys: atomic within a chunk, not across chunks.
    for (std::size_t begin = 0; begin < keys.size(); begin += kMaxTxnOps) {
        std::vector<Op> puts;
        for (std::size_t i = begin; i < std::min(keys.size(), begin + kMaxTxnOps); ++i) {
            puts.push_back(Op::put(impl_->full(keys[i]), values[i]));
        }
        impl_->fenced("multi_set", {}, std::move(puts));
    }
}

}  // namespace ptrun::etcd
