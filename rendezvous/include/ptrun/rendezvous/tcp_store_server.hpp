#pragma once
/// TcpStoreServer: a c10d TCPStore-wire-compatible store server that PyTorch 1.13 and 2.x
/// workers can use as their store (TORCHELASTIC_USE_AGENT_STORE=True, MASTER_ADDR/MASTER_PORT).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace ptrun::rdzv {

/// Caps on untrusted input. Sizes are checked before anything is allocated; a connection that
/// exceeds one is closed (one log line) and the server goes on. Defaults follow torch's libuv
/// server where it has one.
///
/// Memory bound: whatever clients send, the server holds at most max_stored_bytes (keys, values,
/// queues) + max_buffered_bytes (partial requests, queued replies and the values they reference)
/// + max_request_bytes (the one request being applied) + about 1 KiB per open connection.
struct TcpStoreLimits {
    std::size_t max_key_bytes = 8 * 1024;              ///< per key (libuv: 8 KiB)
    std::size_t max_value_bytes = 8 * 1024 * 1024;     ///< per value (libuv: 8 MiB)
    std::size_t max_keys_per_request = 128 * 1024;     ///< CHECK/WAIT/MULTI_* count (libuv: 128 Ki)
    std::size_t max_request_bytes = 64 * 1024 * 1024;  ///< one whole request
    /// Replies queued for a client that does not read them; beyond this it is disconnected so
    /// that it cannot make the server hold unbounded memory. A single reply to a client with
    /// nothing queued may be larger (a GET of a big value): only the buffer budget bounds it.
    std::size_t max_queued_bytes_per_connection = 64 * 1024 * 1024;
    std::size_t max_connections = 65536;  ///< further connections are accepted and closed
    /// Server-wide: partial requests plus queued replies at their real cost (a referenced stored
    /// value counts once). When exceeded, the connection holding the most is closed (logged); a
    /// reply that alone would exceed what is left is refused the same way before it is built.
    std::size_t max_buffered_bytes = 256 * 1024 * 1024;
    /// Keys, values and queues held by the store (with their bookkeeping); a write beyond it
    /// closes the writer's connection (logged) and leaves the store unchanged.
    std::size_t max_stored_bytes = 1024 * 1024 * 1024;
};

/// Relay mode (a node's store for its own ranks): the server stores nothing itself and forwards
/// its clients' requests to the store at host:port over a few connections, so that the store
/// holds a few connections per node rather than one per rank (see StoreRelay in the sources).
struct TcpStoreRelay {
    std::string host;  ///< the store relayed to; empty = not a relay (a store of its own)
    std::uint16_t port = 0;
    int links = 4;              ///< pipelined connections carrying every request but waits
    int max_wait_links = 1024;  ///< connections carrying WAITs (one per distinct key set)
    std::chrono::seconds connect_timeout{10};  ///< per connection to the store
};

struct TcpStoreServerOptions {
    /// Address to listen on: "0.0.0.0" (all IPv4), "::" (dual-stack), an address or a name.
    std::string host = "0.0.0.0";
    /// 0 = an ephemeral port; port() reports the bound one.
    std::uint16_t port = 0;
    /// >= 0: adopt this already-bound (listening) socket instead of binding; the server owns
    /// and closes it. host/port are then ignored.
    int adopt_fd = -1;
    TcpStoreLimits limits{};
    /// Where connection errors and lifecycle lines go; null = nowhere.
    std::shared_ptr<spdlog::logger> logger{};
    /// TCP keepalive on accepted connections, so that a client whose host vanished (no FIN, no
    /// reset) is dropped: the first probe after this much silence, 6 more `keepalive / 6` (at
    /// least 1 s) apart. Idle clients that are alive answer the probes and stay. 0 = off.
    std::chrono::seconds keepalive{60};
    /// Non-empty: a GET of exactly this key (once it exists: set it, so that the WAIT a client
    /// sends before its GET returns) answers the server's CLOCK_MONOTONIC now, in decimal
    /// nanoseconds, instead of the stored value. A launcher's agents measure their clock offset
    /// to the store host with it (round trip / 2 is the error).
    std::string clock_key{};
    /// Non-empty host: relay to that store instead of storing (clear() then does nothing).
    TcpStoreRelay relay{};
    /// False: the server thread starts at start(), not in the constructor; until then
    /// connections wait in the listen backlog and every call runs on the caller's thread. A
    /// launcher whose workers may never connect starts it when listening_fd() is readable.
    bool start_thread = true;
};

/// What the server holds right now (tests, diagnostics).
struct TcpStoreStats {
    std::size_t connections = 0;
    std::size_t buffered_bytes = 0;  ///< as counted against max_buffered_bytes
    std::size_t stored_bytes = 0;    ///< as counted against max_stored_bytes
    std::size_t keys = 0;            ///< keys held (queues not counted)
    std::size_t relay_links = 0;     ///< relay mode: connections open to the store
    std::size_t relay_waiting = 0;   ///< relay mode: clients in a shared WAIT
};

/// Serves both wire dialects on one port, detected per connection (spec §3.3): PyTorch 1.13/2.0
/// (legacy numbering, idle callback connections, WATCH_KEY) and 2.2+ (VALIDATE, PING,
/// CANCEL_WAIT, APPEND, MULTI_*, QUEUE_*, LIST_KEYS, BARRIER). One io_context on one owned
/// thread; waits are registered and answered when keys appear; nothing polls. All methods may
/// be called from any thread but the server's own (e.g. not from a logger sink); stop() and the
/// destructor must not race each other. Its sockets are close-on-exec, so forked workers
/// inherit none of them.
///
/// Hosting the workers' store in a launcher (torchrun's "agent store"):
///   TcpStoreServer store({.host = "0.0.0.0", .port = 29500});    // port 0: any free port
///   worker_env["MASTER_ADDR"] = <a name or address every worker can reach>;
///   worker_env["MASTER_PORT"] = std::to_string(store.port());
///   worker_env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
///   store.clear();  // before each restart attempt: 2.5+ workers no longer prefix their keys
class TcpStoreServer {
  public:
    /// Binds and listens, then starts serving on its own thread (options.start_thread; else at
    /// start()). Throws StoreError if the address cannot be resolved or bound (the message
    /// names host and port).
    explicit TcpStoreServer(TcpStoreServerOptions options = {});
    /// Stops (joins the thread); never throws.
    ~TcpStoreServer();
    TcpStoreServer(const TcpStoreServer&) = delete;
    TcpStoreServer& operator=(const TcpStoreServer&) = delete;

    /// The bound port (the ephemeral one when options.port was 0). Does not block.
    std::uint16_t port() const noexcept;
    /// Starts the server thread (start_thread = false); a no-op once it runs or after stop().
    void start();
    /// The listening socket, for a caller that starts the thread at the first connection; the
    /// server keeps owning it (valid until stop()).
    int listening_fd() const noexcept;
    /// Erases every key and queue (fresh namespace for a restart attempt); pending waits stay
    /// registered. Blocks until the server thread has done it.
    void clear();
    /// Like clear(), but keys and queues starting with `keep_prefix` survive (a launcher keeps its
    /// own rendezvous state while wiping its workers' keys).
    void clear_except(std::string keep_prefix);
    /// A snapshot of the counts; blocks until the server thread has taken it.
    TcpStoreStats stats();
    /// Closes the listener and every connection and joins the thread. Idempotent. Rethrows
    /// (once) an unexpected exception that escaped a handler on the server thread.
    void stop();

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::rdzv
