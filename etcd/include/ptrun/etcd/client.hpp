#pragma once
/// A client of etcd's v3 API through its JSON gateway (HTTP/1.1, or HTTPS with the conf's
/// certificates), written on Boost.Beast. Every member of the cluster is listed; a request that
/// cannot be sent to one (refused, reset, timed out) goes to the next, and the member that
/// answered last is tried first. Keys and values are arbitrary bytes (base64 on the wire).
/// Everything read is bounded (ClientOptions::max_response).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::etcd {

struct Endpoint {
    std::string host;  ///< name, IPv4 or IPv6 address (no brackets)
    std::uint16_t port = 2379;
};

struct ClientOptions {
    std::vector<Endpoint> endpoints;  ///< every member; at least one
    bool https = false;
    std::string cacert;  ///< PEM file of the CA that signed the members' certificates ("": system)
    std::string cert;    ///< PEM client certificate ("": none)
    std::string key;     ///< its PEM private key
    /// Connect + one request/response, per member tried.
    std::chrono::milliseconds io_timeout{5'000};
    std::size_t max_response = 16u << 20;  ///< bytes of one response body
    /// When no member could serve a request, try them all again (every 250 ms) until this much
    /// time has passed since it started: a member that just lost its peers may still hold a
    /// request until its election timeout, and answers `no leader` (NoQuorum) only after it.
    std::chrono::milliseconds retry_for{0};
};

struct KeyValue {
    std::string key;
    std::string value;
    std::int64_t create_revision = 0;
    std::int64_t mod_revision = 0;
    std::int64_t version = 0;
    std::int64_t lease = 0;
};

struct RangeResult {
    std::int64_t revision = 0;  ///< the store's revision when it was read
    std::vector<KeyValue> kvs;
    std::int64_t count = 0;  ///< keys in the range (may exceed kvs.size() with a limit)
};

/// A comparison of one key in a transaction (etcd's Compare): an absent key has version,
/// create_revision and mod_revision 0.
struct Compare {
    enum class Target { Version, Create, Mod, Value };
    enum class Result { Equal, Greater, Less, NotEqual };
    std::string key;
    Target target = Target::Version;
    Result result = Result::Equal;
    std::int64_t number = 0;  ///< for Version, Create, Mod
    std::string value;        ///< for Value

    /// `key`'s `target` (Version, Create or Mod) equals `number`.
    static Compare equal(std::string key, Target target, std::int64_t number);
    /// `key`'s value equals `value`.
    static Compare value_equal(std::string key, std::string value);
};

/// One operation of a transaction.
struct Op {
    enum class Kind { Put, Delete, Range };
    Kind kind = Kind::Put;
    std::string key;
    std::string value;       ///< Put
    std::int64_t lease = 0;  ///< Put: attach to this lease (0: none)
    std::string range_end;   ///< Delete, Range: "" = the key alone
    std::int64_t limit = 0;  ///< Range: at most this many keys (0: all)
    bool keys_only = false;  ///< Range: leave the values out (KeyValue::value is "")

    /// Put `value` at `key`, attached to `lease` (0: none).
    static Op put(std::string key, std::string value, std::int64_t lease = 0);
    /// Delete [key, range_end) ("" = the key alone).
    static Op remove(std::string key, std::string range_end = "");
    /// Read [key, range_end) ("" = the key alone), at most `limit` keys (0: all).
    static Op range(std::string key, std::string range_end = "", std::int64_t limit = 0,
                    bool keys_only = false);
};

struct TxnResult {
    bool succeeded = false;
    std::int64_t revision = 0;
    /// For each Range op of the branch taken, in order: what it read.
    std::vector<std::vector<KeyValue>> ranges;
};

struct WatchEvent {
    enum class Type { Put, Delete };
    Type type = Type::Put;
    KeyValue kv;  ///< for Delete: key and mod_revision only
};

/// The end of the range of every key starting with `prefix` (etcd's prefix range_end).
std::string prefix_end(const std::string& prefix);

/// Errors: rdzv::ConnectionLost when no member could be reached (its message names every
/// endpoint tried and why) or after interrupt(); etcd::NoQuorum (errors.hpp) when members answer
/// but the cluster has no leader; rdzv::StoreError for a refused or malformed exchange.
/// Thread-safe; calls from several threads are serialised (one connection), except watch(),
/// which uses a connection of its own per call.
class Client {
  public:
    explicit Client(ClientOptions options);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Keys in [key, range_end) ("" = key alone), sorted by create revision ascending when
    /// `by_creation`, else by key; at most `limit` (0: all).
    RangeResult range(const std::string& key, const std::string& range_end = "",
                      std::int64_t limit = 0, bool by_creation = false);
    /// Returns the revision of the put.
    std::int64_t put(const std::string& key, const std::string& value, std::int64_t lease = 0);
    /// Returns how many keys were deleted.
    std::int64_t delete_range(const std::string& key, const std::string& range_end = "");
    TxnResult txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                  const std::vector<Op>& failure = {});

    /// A new lease of `ttl` seconds; returns its id.
    std::int64_t lease_grant(std::int64_t ttl_seconds);
    /// Renews lease `id`; returns its TTL now, or 0 when the lease has expired or is unknown.
    std::int64_t lease_keepalive(std::int64_t id);
    /// Ends lease `id` (its keys are deleted); no error when it is already gone.
    void lease_revoke(std::int64_t id);

    /// What a watch given one calls once it is set up, when writes landed at or after its
    /// start_revision before that: the caller reads again what the watch did not see; true ends
    /// the watch at once (no events).
    using CatchUp = std::function<bool()>;

    /// Blocks until [key, range_end) has events at or after `start_revision`, at most
    /// `timeout`; returns the first batch of them (empty on timeout). A compacted
    /// start_revision throws rdzv::StoreError. With `catch_up`, the watch starts where etcd set
    /// it up instead (etcd serves a watch from a past revision only every 100 ms: mvcc's
    /// unsynced watchers) and `catch_up` covers the writes in between, if any.
    std::vector<WatchEvent> watch(const std::string& key, const std::string& range_end,
                                  std::int64_t start_revision, std::chrono::milliseconds timeout,
                                  const CatchUp& catch_up = {});

    /// The endpoints as text for messages: "a:2379, b:2379".
    std::string endpoints_text() const;

    /// From any thread: calls in progress fail at once with rdzv::ConnectionLost, and so do
    /// later ones.
    void interrupt() noexcept;

    /// Until cleared (nullopt), no unary call runs past `deadline`: each exchange and the retries
    /// end by it, and a call after it fails at once with rdzv::ConnectionLost (a caller's
    /// join_timeout, say, whatever io_timeout and retry_for allow one call).
    void limit_until(std::optional<std::chrono::steady_clock::time_point> deadline);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::etcd
