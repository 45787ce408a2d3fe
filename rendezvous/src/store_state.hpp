#pragma once
/// StoreState: the server's key/value map, queues, waits and watches, with the per-query
/// semantics of spec §2.3. No I/O and no locking: it lives on the server thread.

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "protocol.hpp"
#include "wait_registry.hpp"

namespace ptrun::rdzv::detail {

/// Bytes to deliver to a connection (a reply, a wake-up or a watch notification).
struct Outgoing {
    ConnId to;
    std::string bytes;
};

class StoreState {
public:
    /// Applies `request` from connection `from` and appends what must be sent (to `from` and to
    /// any connection it wakes) to `out`, in order. A new request from a connection with a
    /// pending wait first drops that wait silently (spec §2.4.7); CANCEL_WAIT always answers.
    /// Throws ProtocolError (close `from`) for ADD/BARRIER on a non-integer value or overflow;
    /// the store is then unchanged.
    void handle(ConnId from, const Request& request, std::vector<Outgoing>& out);
    /// Forgets everything about `conn` (waits, watches). Call when it closes.
    void disconnect(ConnId conn);
    /// Erases every key and queue; waits and watches stay.
    void clear();
    /// Erases every key and queue not starting with `keep_prefix`.
    void clear_except(std::string_view keep_prefix);

    std::size_t num_keys() const noexcept { return values_.size(); }
    bool waiting(ConnId conn) const { return waits_.waiting(conn) || barriers_.waiting(conn); }

private:
    bool exists(const std::string& key) const;
    /// Stores `value` at `key`, sends watch notifications and wakes waiters on `key`.
    void write(const std::string& key, std::string value, std::vector<Outgoing>& out);
    void wake(const std::string& key, bool only_one, std::vector<Outgoing>& out);
    void watch_notify(WatchResponse what, const std::string& key, std::string_view old_value,
                      std::string_view new_value, std::vector<Outgoing>& out);
    /// The decimal counter at `key` plus `delta`; throws ProtocolError if it is not one.
    std::int64_t counter_plus(const std::string& key, std::int64_t delta) const;

    std::unordered_map<std::string, std::string> values_;
    std::unordered_map<std::string, std::deque<std::string>> queues_;
    WaitRegistry waits_;     ///< WAIT: woken by any write of a key
    WaitRegistry barriers_;  ///< BARRIER: woken only when the count reaches the world size
    std::unordered_map<std::string, std::unordered_set<ConnId>> watchers_;
    std::unordered_map<ConnId, std::vector<std::string>> watched_by_;
};

}  // namespace ptrun::rdzv::detail
