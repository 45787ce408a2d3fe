#pragma once
/// StoreState: the server's key/value map, queues, waits and watches, with the per-query
/// semantics of spec §2.3. No I/O and no locking: it lives on the server thread.

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "protocol.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "reply.hpp"
#include "wait_registry.hpp"

namespace ptrun::rdzv::detail {

class StoreState {
  public:
    /// Uses limits.max_value_bytes (APPEND) and limits.max_stored_bytes.
    /// A GET of `clock_key` (when non-empty and set) answers CLOCK_MONOTONIC now in decimal ns.
    explicit StoreState(const TcpStoreLimits& limits = {}, std::string clock_key = {});

    /// Applies `request` from connection `from` and appends what must be sent (to `from` and to
    /// any connection it wakes) to `out`, in order. Replies reference large stored values
    /// rather than copying them; a reply that must be copied (LIST_KEYS) and would exceed
    /// `reply_limit` bytes is refused before it is built. A new request from a connection with
    /// a pending wait first drops that wait silently (spec §2.4.7); CANCEL_WAIT always answers.
    /// Throws ProtocolError (close `from`) for ADD/BARRIER on a non-integer value or overflow,
    /// an APPEND past max_value_bytes, a write past max_stored_bytes or a refused reply; the
    /// store is then unchanged.
    void handle(ConnId from, Request&& request, std::vector<Outgoing>& out,
                std::size_t reply_limit = std::numeric_limits<std::size_t>::max());
    /// Forgets everything about `conn` (waits, watches). Call when it closes.
    void disconnect(ConnId conn) noexcept;
    /// Erases every key and queue; waits and watches stay.
    void clear() noexcept;
    /// Erases every key and queue not starting with `keep_prefix`.
    void clear_except(std::string_view keep_prefix);

    std::size_t num_keys() const noexcept { return values_.size(); }
    bool waiting(ConnId conn) const { return waits_.waiting(conn) || barriers_.waiting(conn); }
    /// Memory the keys, values and queues take (capacity plus bookkeeping), as checked against
    /// max_stored_bytes.
    std::size_t stored_bytes() const noexcept { return stored_; }

  private:
    bool exists(const std::string& key) const;
    /// Stores `value` at `key`, sends watch notifications and wakes waiters on `key`.
    void write(const std::string& key, std::string value, std::vector<Outgoing>& out);
    void append(const std::string& key, const std::string& tail, std::vector<Outgoing>& out);
    void wake(const std::string& key, bool only_one, std::vector<Outgoing>& out);
    void watch_notify(WatchResponse what, const std::string& key, const BlobPtr& old_value,
                      const BlobPtr& new_value, std::vector<Outgoing>& out);
    /// The decimal counter at `key` plus `delta`; throws ProtocolError if it is not one.
    std::int64_t counter_plus(const std::string& key, std::int64_t delta) const;
    /// Throws ProtocolError unless replacing `old_cost` stored bytes by `new_cost` fits.
    void check_room(std::size_t old_cost, std::size_t new_cost, std::string_view key) const;
    /// What a key with a value of `capacity` bytes costs.
    static std::size_t entry_cost(const std::string& key, std::size_t capacity) noexcept;
    void erase_value(std::unordered_map<std::string, BlobPtr>::iterator it) noexcept;
    void queue_push(const std::string& key, std::string value);
    void list_keys(ConnId from, std::size_t reply_limit, std::vector<Outgoing>& out) const;

    TcpStoreLimits limits_;
    std::string clock_key_;
    std::unordered_map<std::string, BlobPtr> values_;
    std::unordered_map<std::string, std::deque<std::string>> queues_;
    std::size_t stored_ = 0;     ///< see stored_bytes()
    std::size_t key_bytes_ = 0;  ///< total length of the keys in values_ (LIST_KEYS' size)
    WaitRegistry waits_;         ///< WAIT: woken by any write of a key
    WaitRegistry barriers_;      ///< BARRIER: woken only when the count reaches the world size
    std::unordered_map<std::string, std::unordered_set<ConnId>> watchers_;
    std::unordered_map<ConnId, std::vector<std::string>> watched_by_;
};

}  // namespace ptrun::rdzv::detail
