#pragma once
/// HTTP/1.1 (or HTTPS) to one etcd member, driven on the calling thread with a deadline on every
/// step. Beast and Asio stay behind this header (one translation unit compiles them).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ptrun/etcd/client.hpp"

namespace ptrun::etcd::detail {

using Clock = std::chrono::steady_clock;

/// This member could not be reached or dropped the exchange (refused, reset, timed out, TLS
/// failure): another member may serve the request. what() is the reason, e.g. "connection
/// refused" or "timed out after 5000 ms".
class TransportError : public std::runtime_error {
  public:
    explicit TransportError(const std::string& reason, bool timed_out = false)
        : std::runtime_error(reason), timed_out_(timed_out) {}
    /// The member did not answer in time (as opposed to refusing or dropping the connection).
    bool timed_out() const noexcept { return timed_out_; }

  private:
    bool timed_out_;
};

/// The loop driving the exchange was stopped (Client::interrupt()).
class Interrupted : public std::runtime_error {
  public:
    Interrupted() : std::runtime_error("interrupted") {}
};

/// One io_context run by the thread that calls into a Connection on it. stop() is safe from any
/// thread and sticky: a run in progress returns at once, and every later one throws Interrupted.
class Loop {
  public:
    Loop();
    ~Loop();
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    void stop() noexcept;
    bool stopped() const noexcept { return stopped_.load(); }

    struct Impl;  ///< defined where Asio is compiled
    Impl& impl() noexcept { return *impl_; }

  private:
    std::unique_ptr<Impl> impl_;
    std::atomic<bool> stopped_{false};
};

/// The TLS settings shared by a client's connections (CA, client certificate and key).
class TlsContext {
  public:
    /// Loads the files named in `options`; throws rdzv::StoreError naming an unreadable one.
    explicit TlsContext(const ClientOptions& options);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    struct Impl;  ///< defined where Asio is compiled
    Impl& impl() noexcept { return *impl_; }

  private:
    std::unique_ptr<Impl> impl_;
};

/// A reply read whole.
struct HttpReply {
    unsigned status = 0;
    std::string body;
};

/// What Connection::next_message found.
enum class StreamStep { Message, End, Deadline };

/// One connection to one member. Every step throws TransportError (the connection is then
/// closed), Interrupted, or rdzv::StoreError for a reply that breaks HTTP or the size bound.
/// Must be destroyed before its Loop.
class Connection {
  public:
    /// `tls`: null for plain HTTP. Bodies (and stream messages) are at most `max_body` bytes.
    Connection(Loop& loop, Endpoint endpoint, TlsContext* tls, std::size_t max_body);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Resolves, connects and (HTTPS) handshakes, by `deadline`.
    void connect(Clock::time_point deadline);
    bool is_open() const noexcept;
    /// Whether the last exchange left the connection reusable (keep-alive, fully read).
    bool reusable() const noexcept;
    void close() noexcept;

    /// POSTs `body` (JSON) to `target` and reads the whole reply by `deadline`.
    HttpReply post(std::string_view target, std::string body, Clock::time_point deadline);
    /// POSTs to a streaming endpoint and reads the reply's header by `deadline`. For a status
    /// other than 200 the body is read whole into the reply; for 200 it is left to
    /// next_message(). The connection is not reused after a stream.
    HttpReply post_stream(std::string_view target, std::string body, Clock::time_point deadline);
    /// The next newline-separated message of the stream into `out`, waiting until `deadline`.
    /// End: the body ended (a last unterminated message is returned first). Deadline: nothing
    /// complete arrived in time (the connection is closed).
    StreamStep next_message(std::string& out, Clock::time_point deadline);

    const Endpoint& endpoint() const noexcept { return endpoint_; }

  private:
    struct Impl;
    Endpoint endpoint_;
    std::unique_ptr<Impl> impl_;
};

/// "host:port", with brackets around an IPv6 address.
std::string endpoint_text(const Endpoint& endpoint);

}  // namespace ptrun::etcd::detail
