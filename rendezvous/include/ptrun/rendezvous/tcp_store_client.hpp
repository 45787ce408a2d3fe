#pragma once
/// TcpStoreClient: a Store backed by a c10d TCPStore-compatible server (ptrun's or torch's).

#include <cstdint>
#include <memory>
#include <string>

#include "ptrun/rendezvous/backoff.hpp"
#include "ptrun/rendezvous/dialect.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

struct TcpStoreClientOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 29500;
    /// Modern (2.2+: VALIDATE + PING on connect) or Legacy (1.13/2.0 numbering, no handshake).
    Dialect dialect = Dialect::Modern;
    /// How long connecting (with retries) may take, at construction and on reconnect.
    Duration connect_timeout = kDefaultTimeout;
    /// Deadline for sending a request and receiving its reply (non-waiting verbs).
    Duration io_timeout = kDefaultTimeout;
    /// Delays between connection attempts.
    BackoffOptions backoff{};
};

/// Keys go on the wire exactly as given. torch's TCPStore adds a leading "/" to every public
/// key, so `PrefixStore("", client)` addresses the keys torch workers see as "k" ("/k").
/// Thread-safe: one mutex per client serialises calls, so a blocked wait() holds up the other
/// threads of the same client. After ConnectionLost (or a timed-out reply) the connection is
/// dropped and the next call reconnects (within connect_timeout).
/// Legacy dialect: multi_get/multi_set become GET/SET loops and a timed-out wait() drops the
/// connection (1.13 has no CANCEL_WAIT); append uses code 9, which only ptrun's server knows;
/// queue_*, list_keys, barrier and ping throw StoreError.
class TcpStoreClient final : public Store {
  public:
    /// Connects, retrying with backoff until connect_timeout; throws ConnectionLost after it.
    explicit TcpStoreClient(TcpStoreClientOptions options);
    ~TcpStoreClient() override;
    TcpStoreClient(const TcpStoreClient&) = delete;
    TcpStoreClient& operator=(const TcpStoreClient&) = delete;

    void set(std::string_view key, std::string_view value) override;
    /// WAIT then GET, like torch's client: blocks until the key exists, at most `timeout`.
    std::string get(std::string_view key, Duration timeout) override;
    std::int64_t add(std::string_view key, std::int64_t delta) override;
    std::string compare_set(std::string_view key, std::string_view expected,
                            std::string_view desired) override;
    bool check(const std::vector<std::string>& keys) override;
    /// Server-side WAIT; on timeout sends CANCEL_WAIT and throws StoreTimeout, unless the keys
    /// turned up in the race (STOP_WAITING before WAIT_CANCELED), in which case it returns.
    void wait(const std::vector<std::string>& keys, Duration timeout) override;
    bool delete_key(std::string_view key) override;
    std::int64_t num_keys() override;
    void append(std::string_view key, std::string_view value) override;
    std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                       Duration timeout) override;
    void multi_set(const std::vector<std::string>& keys,
                   const std::vector<std::string>& values) override;
    void queue_push(std::string_view key, std::string_view value) override;
    std::string queue_pop(std::string_view key, Duration timeout) override;
    std::int64_t queue_len(std::string_view key) override;
    /// Blocks until `key`'s queue is not empty (at most `timeout`, then StoreTimeout), then pops
    /// up to `max` elements with one pipelined batch of QUEUE_POPs; returns them in queue order
    /// (empty if another consumer won them). Three round trips however many. Modern dialect only.
    std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                             Duration timeout) override;
    std::vector<std::string> list_keys() override;

    /// Server-side barrier: counts arrivals at `key` and blocks until `world_size` have arrived,
    /// at most `timeout` (then CANCEL_WAIT and StoreTimeout). Modern dialect only.
    void barrier(std::string_view key, std::int64_t world_size, Duration timeout);
    /// PING round trip (modern only); throws ConnectionLost if the echo is wrong or missing.
    void ping();
    const TcpStoreClientOptions& options() const noexcept;
    /// From any thread: a call blocked on this client (e.g. a long wait()) fails at once with
    /// ConnectionLost, and so does every later call. For shutting down a watcher thread.
    void interrupt() noexcept override;
    /// True on the modern dialect (CANCEL_WAIT ends a wait and keeps the connection), where the
    /// first call makes the eventfd wake() writes (one descriptor more); a 1.13 server's wait
    /// cannot be cut short without retiring the connection.
    bool wakeable() const noexcept override;
    void wake() noexcept override;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::rdzv
