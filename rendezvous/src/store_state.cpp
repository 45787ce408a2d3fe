#include "store_state.hpp"

#include <ctime>
#include <optional>

#include "ptrun/rendezvous/counter_text.hpp"

namespace ptrun::rdzv::detail {
namespace {

/// Bookkeeping per stored key (hash node, Blob, control block) and per queued value, roughly.
constexpr std::size_t kEntryCost = 128;
constexpr std::size_t kQueueItemCost = 48;

Outgoing reply_bytes(ConnId to, const BlobPtr& v) {
    ReplyBuilder b(to);
    b.field(v);
    return std::move(b).take();
}
constexpr auto kStopWaiting = static_cast<std::uint8_t>(WaitResponse::StopWaiting);
constexpr auto kWaitCanceled = static_cast<std::uint8_t>(WaitResponse::WaitCanceled);

std::string short_key(std::string_view key) { return std::string(key.substr(0, 64)); }

}  // namespace

StoreState::StoreState(const TcpStoreLimits& limits, std::string clock_key)
    : limits_(limits), clock_key_(std::move(clock_key)) {}

std::size_t StoreState::entry_cost(const std::string& key, std::size_t capacity) noexcept {
    return key.size() + capacity + kEntryCost;
}

void StoreState::check_room(std::size_t old_cost, std::size_t new_cost,
                            std::string_view key) const {
    if (new_cost <= old_cost || stored_ - old_cost + new_cost <= limits_.max_stored_bytes) return;
    throw ProtocolError("store full: writing key '" + short_key(key) + "' would take it to " +
                        std::to_string(stored_ - old_cost + new_cost) +
                        " bytes, over the limit of " + std::to_string(limits_.max_stored_bytes) +
                        " (max_stored_bytes)");
}

bool StoreState::exists(const std::string& key) const {
    if (values_.count(key) != 0) return true;
    auto q = queues_.find(key);
    return q != queues_.end() && !q->second.empty();
}

void StoreState::wake(const std::string& key, bool only_one, std::vector<Outgoing>& out) {
    const auto ready = waits_.notify(key, only_one);
    out.reserve(out.size() + ready.size());  // the waiters left the registry: none may be lost
    for (ConnId c : ready) out.push_back(reply_u8(c, kStopWaiting));
}

void StoreState::watch_notify(WatchResponse what, const std::string& key, const BlobPtr& old_value,
                              const BlobPtr& new_value, std::vector<Outgoing>& out) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    for (ConnId c : it->second) {
        ReplyBuilder b(c);
        b.u8(static_cast<std::uint8_t>(what));
        b.field(key);
        b.field(old_value);
        b.field(new_value);
        out.push_back(std::move(b).take());
    }
}

void StoreState::write(const std::string& key, std::string value, std::vector<Outgoing>& out) {
    // One hash of the key: a new key's entry is made empty first (and dropped again on failure).
    auto [it, created] = values_.try_emplace(key);
    if (created) {
        try {
            check_room(0, entry_cost(key, value.capacity()), key);
            it->second = std::make_shared<Blob>(Blob{std::move(value), 0});
        } catch (...) {
            values_.erase(it);
            throw;
        }
    } else {
        check_room(entry_cost(key, it->second->bytes.capacity()), entry_cost(key, value.capacity()),
                   key);
    }
    const bool watched = !watchers_.empty() && watchers_.count(key) != 0;
    if (created) {
        key_bytes_ += key.size();
        stored_ += entry_cost(key, it->second->bytes.capacity());
        if (watched) watch_notify(WatchResponse::KeyCreated, key, nullptr, it->second, out);
    } else {
        const BlobPtr old = watched ? it->second : nullptr;
        const std::size_t old_capacity = it->second->bytes.capacity();
        if (it->second.use_count() == 1) {
            it->second->bytes = std::move(value);  // nobody else sees it: reuse the Blob
        } else {
            it->second = std::make_shared<Blob>(Blob{std::move(value), 0});  // replies keep the old
        }
        stored_ = stored_ - old_capacity + it->second->bytes.capacity();
        if (watched) watch_notify(WatchResponse::KeyUpdated, key, old, it->second, out);
    }
    wake(key, false, out);
}

void StoreState::append(const std::string& key, const std::string& tail,
                        std::vector<Outgoing>& out) {
    auto it = values_.find(key);
    const std::size_t old_size = it == values_.end() ? 0 : it->second->bytes.size();
    if (old_size + tail.size() > limits_.max_value_bytes) {
        throw ProtocolError("APPEND to key '" + short_key(key) + "' would make its value " +
                            std::to_string(old_size + tail.size()) + " bytes, over the limit of " +
                            std::to_string(limits_.max_value_bytes) + " (max_value_bytes)");
    }
    if (it == values_.end() || it->second.use_count() != 1 || watchers_.count(key) != 0) {
        std::string value;  // a copy: a queued reply or a watch notification sees the old value
        value.reserve(old_size + tail.size());
        if (old_size > 0) value = it->second->bytes;
        value += tail;
        write(key, std::move(value), out);
        return;
    }
    // In place, with the string's geometric growth: appending n bytes costs O(n) amortised.
    std::string& bytes = it->second->bytes;
    check_room(bytes.capacity(), old_size + tail.size(), key);
    stored_ -= bytes.capacity();
    bytes += tail;
    stored_ += bytes.capacity();
    wake(key, false, out);
}

void StoreState::erase_value(std::unordered_map<std::string, BlobPtr>::iterator it) noexcept {
    stored_ -= entry_cost(it->first, it->second->bytes.capacity());
    key_bytes_ -= it->first.size();
    values_.erase(it);
}

void StoreState::queue_push(const std::string& key, std::string value) {
    auto q = queues_.find(key);
    const std::size_t cost = value.capacity() + kQueueItemCost;
    check_room(0, cost + (q == queues_.end() ? entry_cost(key, 0) : 0), key);
    if (q == queues_.end()) {
        q = queues_.try_emplace(key).first;
        stored_ += entry_cost(key, 0);
    }
    q->second.push_back(std::move(value));
    stored_ += cost;
}

std::int64_t StoreState::counter_plus(const std::string& key, std::int64_t delta) const {
    auto it = values_.find(key);
    const auto counter = it == values_.end() ? std::optional<std::int64_t>(0)
                                             : detail::parse_counter(it->second->bytes);
    if (!counter) {
        throw ProtocolError("value of key '" + short_key(key) + "' is not a decimal integer");
    }
    std::int64_t result = 0;
    if (__builtin_add_overflow(*counter, delta, &result)) {
        throw ProtocolError("counter at key '" + short_key(key) + "' would overflow");
    }
    return result;
}

void StoreState::list_keys(ConnId from, std::size_t reply_limit, std::vector<Outgoing>& out) const {
    // Checked before anything is built: the reply is a copy of every key.
    const std::size_t size = 8 + 8 * values_.size() + key_bytes_;
    if (size > reply_limit) {
        throw ProtocolError("LIST_KEYS reply of " + std::to_string(size) + " bytes (" +
                            std::to_string(values_.size()) + " keys) exceeds the " +
                            std::to_string(reply_limit) + " bytes left in the buffer budget");
    }
    Outgoing o(from, {});
    o.bytes.reserve(size);
    put_i64(o.bytes, static_cast<std::int64_t>(values_.size()));
    for (const auto& kv : values_) put_bytes(o.bytes, kv.first);
    out.push_back(std::move(o));
}

void StoreState::handle(ConnId from, Request&& r, std::vector<Outgoing>& out,
                        std::size_t reply_limit) {
    if (r.op != Op::CancelWait) {
        // The client gave up on its wait (a 1.13 client after its socket timeout): forget it
        // rather than deliver a stale STOP_WAITING into the next reply (spec §2.4.7).
        waits_.remove(from);
        barriers_.remove(from);
    }
    static const BlobPtr kAbsent;
    auto find = [&](const std::string& key) -> const BlobPtr& {  // no reference count traffic
        auto it = values_.find(key);
        return it == values_.end() ? kAbsent : it->second;
    };
    switch (r.op) {
        case Op::Validate:  // RequestStream consumes the first and rejects any later one
            throw ProtocolError("unexpected VALIDATE");
        case Op::Set:
            write(r.keys[0], std::move(r.values[0]), out);
            break;
        case Op::CompareSet: {
            const std::string& key = r.keys[0];
            const std::string& expected = r.values[0];
            auto it = values_.find(key);
            if (it == values_.end() ? !expected.empty() : it->second->bytes != expected) {
                if (it == values_.end()) {  // absent: the reply is `expected` (spec §2.3)
                    ReplyBuilder b(from);
                    b.field(expected);
                    out.push_back(std::move(b).take());
                } else {
                    out.push_back(reply_bytes(from, it->second));
                }
                break;
            }
            write(key, std::move(r.values[1]), out);  // creation wakes waiters (§2.3)
            out.push_back(reply_bytes(from, find(key)));
            break;
        }
        case Op::Get:
            if (!clock_key_.empty() && r.keys[0] == clock_key_ && exists(r.keys[0])) {
                timespec ts{};
                ::clock_gettime(CLOCK_MONOTONIC, &ts);
                ReplyBuilder b(from);
                b.field(std::to_string(static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
                                       static_cast<std::uint64_t>(ts.tv_nsec)));
                out.push_back(std::move(b).take());
                break;
            }
            out.push_back(reply_bytes(from, find(r.keys[0])));
            break;
        case Op::Add: {
            const std::int64_t value = counter_plus(r.keys[0], r.number);
            write(r.keys[0], std::to_string(value), out);
            out.push_back(reply_i64(from, value));
            break;
        }
        case Op::Check: {
            bool ready = true;
            for (const auto& k : r.keys) ready = ready && exists(k);
            const auto answer = ready ? CheckResponse::Ready : CheckResponse::NotReady;
            out.push_back(reply_u8(from, static_cast<std::uint8_t>(answer)));
            break;
        }
        case Op::Wait: {
            std::vector<std::string> missing;
            for (auto& k : r.keys) {
                if (!exists(k)) missing.push_back(std::move(k));
            }
            if (missing.empty()) {
                out.push_back(reply_u8(from, kStopWaiting));
            } else {
                waits_.add(from, missing);
            }
            break;
        }
        case Op::NumKeys:
            out.push_back(reply_i64(from, static_cast<std::int64_t>(values_.size())));
            break;
        case Op::WatchKey: {
            if (watchers_[r.keys[0]].insert(from).second) watched_by_[from].push_back(r.keys[0]);
            out.push_back(
                reply_u8(from, static_cast<std::uint8_t>(WatchResponse::KeyCallbackRegistered)));
            break;
        }
        case Op::DeleteKey: {
            auto it = values_.find(r.keys[0]);
            const bool existed = it != values_.end();
            if (existed) {
                watch_notify(WatchResponse::KeyDeleted, r.keys[0], it->second, nullptr, out);
                erase_value(it);
            }
            out.push_back(reply_i64(from, existed ? 1 : 0));
            break;
        }
        case Op::Append:
            append(r.keys[0], r.values[0], out);
            break;
        case Op::MultiGet: {
            ReplyBuilder b(from);
            for (const auto& k : r.keys) b.field(find(k));
            out.push_back(std::move(b).take());
            break;
        }
        case Op::MultiSet: {
            std::size_t old_cost = 0;
            std::size_t new_cost = 0;
            for (std::size_t i = 0; i < r.keys.size(); ++i) {  // all of it fits, or none is set
                auto it = values_.find(r.keys[i]);
                if (it != values_.end()) {
                    old_cost += entry_cost(it->first, it->second->bytes.capacity());
                }
                new_cost += entry_cost(r.keys[i], r.values[i].capacity());
            }
            if (!r.keys.empty()) check_room(old_cost, new_cost, r.keys[0]);
            for (std::size_t i = 0; i < r.keys.size(); ++i) {
                write(r.keys[i], std::move(r.values[i]), out);
            }
            break;
        }
        case Op::CancelWait:
            waits_.remove(from);
            barriers_.remove(from);
            out.push_back(reply_u8(from, kWaitCanceled));
            break;
        case Op::Ping: {
            Outgoing o(from, {});
            put_u32(o.bytes, r.word);
            out.push_back(std::move(o));
            break;
        }
        case Op::QueuePush:
            queue_push(r.keys[0], std::move(r.values[0]));
            wake(r.keys[0], true, out);
            break;
        case Op::QueuePop: {
            auto it = queues_.find(r.keys[0]);
            const std::size_t len = it == queues_.end() ? 0 : it->second.size();
            ReplyBuilder b(from);
            b.i64(static_cast<std::int64_t>(len));
            if (len > 0) {
                auto value = std::make_shared<Blob>(Blob{std::move(it->second.front()), 0});
                stored_ -= value->bytes.capacity() + kQueueItemCost;
                it->second.pop_front();
                if (it->second.empty()) {
                    stored_ -= entry_cost(it->first, 0);
                    queues_.erase(it);
                }
                b.field(value);
            }
            out.push_back(std::move(b).take());
            break;
        }
        case Op::QueueLen: {
            auto it = queues_.find(r.keys[0]);
            out.push_back(reply_i64(
                from, it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size())));
            break;
        }
        case Op::ListKeys:
            list_keys(from, reply_limit, out);
            break;
        case Op::Barrier: {
            const std::string& key = r.keys[0];
            const std::int64_t count = counter_plus(key, 1);
            write(key, std::to_string(count), out);
            if (count >= r.number) {
                for (ConnId c : barriers_.notify(key)) out.push_back(reply_u8(c, kStopWaiting));
                out.push_back(reply_u8(from, kStopWaiting));
            } else {
                barriers_.add(from, {key});
            }
            break;
        }
    }
}

void StoreState::disconnect(ConnId conn) noexcept {
    waits_.remove(conn);
    barriers_.remove(conn);
    auto it = watched_by_.find(conn);
    if (it == watched_by_.end()) return;
    for (const auto& key : it->second) {
        auto w = watchers_.find(key);
        if (w == watchers_.end()) continue;
        w->second.erase(conn);
        if (w->second.empty()) watchers_.erase(w);
    }
    watched_by_.erase(it);
}

void StoreState::clear() noexcept {
    values_.clear();
    queues_.clear();
    stored_ = 0;
    key_bytes_ = 0;
}

void StoreState::clear_except(std::string_view keep_prefix) {
    for (auto it = values_.begin(); it != values_.end();) {
        auto next = std::next(it);
        if (!it->first.starts_with(keep_prefix)) erase_value(it);
        it = next;
    }
    for (auto it = queues_.begin(); it != queues_.end();) {
        if (it->first.starts_with(keep_prefix)) {
            ++it;
            continue;
        }
        stored_ -= entry_cost(it->first, 0);
        for (const auto& v : it->second) stored_ -= v.capacity() + kQueueItemCost;
        it = queues_.erase(it);
    }
}

}  // namespace ptrun::rdzv::detail
