#include "store_state.hpp"

#include <cctype>
#include <charconv>

namespace ptrun::rdzv::detail {
namespace {

std::string reply_u8(std::uint8_t v) { return std::string(1, static_cast<char>(v)); }
std::string reply_i64(std::int64_t v) {
    std::string s;
    put_i64(s, v);
    return s;
}
std::string reply_bytes(std::string_view v) {
    std::string s;
    put_bytes(s, v);
    return s;
}
const std::string kStopWaiting = reply_u8(static_cast<std::uint8_t>(WaitResponse::StopWaiting));
const std::string kWaitCanceled = reply_u8(static_cast<std::uint8_t>(WaitResponse::WaitCanceled));

/// strtoll-like: optional leading whitespace and sign, at least one digit, rest ignored.
bool parse_counter(std::string_view text, std::int64_t& value) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == '+') ++i;
    const char* begin = text.data() + i;
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    return ec == std::errc{} && end != begin;
}

}  // namespace

bool StoreState::exists(const std::string& key) const {
    if (values_.count(key) != 0) return true;
    auto q = queues_.find(key);
    return q != queues_.end() && !q->second.empty();
}

void StoreState::wake(const std::string& key, bool only_one, std::vector<Outgoing>& out) {
    for (ConnId c : waits_.notify(key, only_one)) out.push_back({c, kStopWaiting});
}

void StoreState::watch_notify(WatchResponse what, const std::string& key,
                              std::string_view old_value, std::string_view new_value,
                              std::vector<Outgoing>& out) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    std::string msg;
    put_u8(msg, static_cast<std::uint8_t>(what));
    put_bytes(msg, key);
    put_bytes(msg, old_value);
    put_bytes(msg, new_value);
    for (ConnId c : it->second) out.push_back({c, msg});
}

void StoreState::write(const std::string& key, std::string value, std::vector<Outgoing>& out) {
    auto [it, created] = values_.try_emplace(key);
    if (watchers_.count(key) != 0) {
        const std::string old = created ? std::string() : it->second;
        watch_notify(created ? WatchResponse::KeyCreated : WatchResponse::KeyUpdated, key, old,
                     value, out);
    }
    it->second = std::move(value);
    wake(key, false, out);
}

std::int64_t StoreState::counter_plus(const std::string& key, std::int64_t delta) const {
    std::int64_t current = 0;
    auto it = values_.find(key);
    if (it != values_.end() && !parse_counter(it->second, current)) {
        throw ProtocolError("value of key '" + key.substr(0, 64) + "' is not a decimal integer");
    }
    std::int64_t result = 0;
    if (__builtin_add_overflow(current, delta, &result)) {
        throw ProtocolError("counter at key '" + key.substr(0, 64) + "' would overflow");
    }
    return result;
}

void StoreState::handle(ConnId from, const Request& r, std::vector<Outgoing>& out) {
    if (r.op != Op::CancelWait) {
        // The client gave up on its wait (a 1.13 client after its socket timeout): forget it
        // rather than deliver a stale STOP_WAITING into the next reply (spec §2.4.7).
        waits_.remove(from);
        barriers_.remove(from);
    }
    auto reply = [&](std::string bytes) { out.push_back({from, std::move(bytes)}); };
    switch (r.op) {
        case Op::Validate:  // RequestStream consumes the first and rejects any later one
            throw ProtocolError("unexpected VALIDATE");
        case Op::Set: write(r.keys[0], r.values[0], out); break;
        case Op::CompareSet: {
            const std::string& key = r.keys[0];
            const std::string& expected = r.values[0];
            const std::string& desired = r.values[1];
            auto it = values_.find(key);
            if (it == values_.end()) {
                if (!expected.empty()) {
                    reply(reply_bytes(expected));
                    break;
                }
                write(key, desired, out);  // creation wakes waiters (the safer choice, §2.3)
                reply(reply_bytes(desired));
            } else if (it->second == expected) {
                write(key, desired, out);
                reply(reply_bytes(desired));
            } else {
                reply(reply_bytes(it->second));
            }
            break;
        }
        case Op::Get: {
            auto it = values_.find(r.keys[0]);
            reply(reply_bytes(it == values_.end() ? std::string_view() : it->second));
            break;
        }
        case Op::Add: {
            const std::int64_t value = counter_plus(r.keys[0], r.number);
            write(r.keys[0], std::to_string(value), out);
            reply(reply_i64(value));
            break;
        }
        case Op::Check: {
            bool ready = true;
            for (const auto& k : r.keys) ready = ready && exists(k);
            reply(reply_u8(static_cast<std::uint8_t>(ready ? CheckResponse::Ready
                                                           : CheckResponse::NotReady)));
            break;
        }
        case Op::Wait: {
            std::vector<std::string> missing;
            for (const auto& k : r.keys) {
                if (!exists(k)) missing.push_back(k);
            }
            if (missing.empty()) {
                reply(kStopWaiting);
            } else {
                waits_.add(from, missing);
            }
            break;
        }
        case Op::NumKeys: reply(reply_i64(static_cast<std::int64_t>(values_.size()))); break;
        case Op::WatchKey: {
            if (watchers_[r.keys[0]].insert(from).second) watched_by_[from].push_back(r.keys[0]);
            reply(reply_u8(static_cast<std::uint8_t>(WatchResponse::KeyCallbackRegistered)));
            break;
        }
        case Op::DeleteKey: {
            auto it = values_.find(r.keys[0]);
            const bool existed = it != values_.end();
            if (existed) {
                watch_notify(WatchResponse::KeyDeleted, r.keys[0], it->second, {}, out);
                values_.erase(it);
            }
            reply(reply_i64(existed ? 1 : 0));
            break;
        }
        case Op::Append: {
            auto it = values_.find(r.keys[0]);
            write(r.keys[0], it == values_.end() ? r.values[0] : it->second + r.values[0], out);
            break;
        }
        case Op::MultiGet: {
            std::string bytes;
            for (const auto& k : r.keys) {
                auto it = values_.find(k);
                put_bytes(bytes, it == values_.end() ? std::string_view() : it->second);
            }
            reply(std::move(bytes));
            break;
        }
        case Op::MultiSet:
            for (std::size_t i = 0; i < r.keys.size(); ++i) write(r.keys[i], r.values[i], out);
            break;
        case Op::CancelWait:
            waits_.remove(from);
            barriers_.remove(from);
            reply(kWaitCanceled);
            break;
        case Op::Ping: {
            std::string bytes;
            put_u32(bytes, r.word);
            reply(std::move(bytes));
            break;
        }
        case Op::QueuePush:
            queues_[r.keys[0]].push_back(r.values[0]);
            wake(r.keys[0], true, out);
            break;
        case Op::QueuePop: {
            auto it = queues_.find(r.keys[0]);
            const std::size_t len = it == queues_.end() ? 0 : it->second.size();
            std::string bytes;
            put_i64(bytes, static_cast<std::int64_t>(len));
            if (len > 0) {
                put_bytes(bytes, it->second.front());
                it->second.pop_front();
                if (it->second.empty()) queues_.erase(it);
            }
            reply(std::move(bytes));
            break;
        }
        case Op::QueueLen: {
            auto it = queues_.find(r.keys[0]);
            reply(reply_i64(it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size())));
            break;
        }
        case Op::ListKeys: {
            std::string bytes;
            put_i64(bytes, static_cast<std::int64_t>(values_.size()));
            for (const auto& kv : values_) put_bytes(bytes, kv.first);
            reply(std::move(bytes));
            break;
        }
        case Op::Barrier: {
            const std::string& key = r.keys[0];
            const std::int64_t count = counter_plus(key, 1);
            write(key, std::to_string(count), out);
            if (count >= r.number) {
                for (ConnId c : barriers_.notify(key)) out.push_back({c, kStopWaiting});
                reply(kStopWaiting);
            } else {
                barriers_.add(from, {key});
            }
            break;
        }
    }
}

void StoreState::disconnect(ConnId conn) {
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

void StoreState::clear() {
    values_.clear();
    queues_.clear();
}

void StoreState::clear_except(std::string_view keep_prefix) {
    std::erase_if(values_, [&](const auto& kv) { return !kv.first.starts_with(keep_prefix); });
    std::erase_if(queues_, [&](const auto& kv) { return !kv.first.starts_with(keep_prefix); });
}

}  // namespace ptrun::rdzv::detail
