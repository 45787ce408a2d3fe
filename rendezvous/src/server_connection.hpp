#pragma once
/// Connection: one accepted client of the TcpStoreServer (reading, parsing, queued writing).

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "buffer_budget.hpp"
#include "epoll_set.hpp"
#include "output_queue.hpp"
#include "protocol.hpp"
#include "reply.hpp"
#include "request_stream.hpp"
#include "wait_registry.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::rdzv::detail {

class Connection;

/// What a Connection needs from the server that owns it. Called on the server thread.
class ConnectionHost {
  public:
    /// A complete request arrived on `conn`, in order. May throw (ProtocolError, bad_alloc):
    /// `conn` is then closed with the message.
    virtual void on_request(Connection& conn, Request&& request) = 0;
    /// `conn` was closed by close(); drop it.
    virtual void on_closed(Connection& conn) noexcept = 0;
    /// `conn` is about to hold `more` bytes more of the buffer budget for `what` ("a reply";
    /// `more` = 0: it just took them): closes the connections holding the most, each with a log
    /// line, until the budget holds. False if `conn` itself holds the most: it was closed too.
    virtual bool make_room(Connection& conn, std::size_t more, const char* what) noexcept = 0;

  protected:
    ~ConnectionHost() = default;
};

/// A non-blocking socket in the server's EpollSet. When it is readable, one recv (into the
/// server's shared read buffer) feeds a RequestStream (any segmentation) and each complete
/// request goes to the host; replies are written at once and only what the kernel does not take
/// is queued (bounded per connection, and server-wide through the budget), with output watched
/// until the queue drains. Nothing it does throws to its caller: any failure (a broken limit, a
/// failed allocation) closes this connection alone, with one log line. An idle connection costs
/// about 1 KiB. Server thread only; owned by the host's table.
class Connection {
  public:
    /// Takes ownership of `fd` (non-blocking, close-on-exec) and adds it to `set` under `id`.
    /// `read_buffer` is shared by every connection (used only inside on_readable()).
    Connection(ConnectionHost& host, EpollSet& set, int fd, ConnId id, std::string peer,
               const TcpStoreLimits& limits, BufferBudget& budget, std::span<char> read_buffer,
               spdlog::logger& log);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// The socket is readable (or hung up): reads once and hands over every complete request.
    void on_readable() noexcept;
    /// The socket is writable: writes what is queued.
    void on_writable() noexcept;
    /// Queues `reply` for the client. Resets the connection instead if the client already has
    /// replies queued and this one would take them past max_queued_bytes_per_connection (a
    /// client that does not read cannot hold memory), or if the buffer budget has no room.
    void send(Outgoing&& reply) noexcept;
    /// Closes the socket, logs `reason` (at warn if `error`), tells the host. Idempotent.
    void close(std::string_view reason, bool error) noexcept;
    /// Like close(reason, true), with a TCP reset: what the kernel still holds for the client
    /// is dropped too.
    void reset(std::string_view reason) noexcept;
    /// Closes the socket and frees the buffers without telling the host (server shutdown).
    void abort() noexcept;

    ConnId id() const noexcept { return id_; }
    bool closed() const noexcept { return fd_ < 0; }
    const std::string& peer() const noexcept { return peer_; }
    /// Bytes of partial request buffered.
    std::size_t request_bytes() const noexcept { return stream_.capacity(); }
    /// What the reply queue keeps alive (referenced stored values in full).
    std::size_t reply_bytes() const noexcept { return queue_.held(); }
    /// What this connection is responsible for in the buffer budget (to rank offenders).
    std::size_t held() const noexcept { return request_bytes() + reply_bytes(); }

  private:
    void read_and_serve();
    void queue_reply(Outgoing&& reply);
    /// Brings the budget's charge for the request buffer up to date.
    void charge_stream() noexcept;
    /// Writes once from the queue (a bounded amount: the rest when next writable); false if
    /// that closed the connection.
    bool flush();
    void fail_write(int error);
    /// Runs `step`; any exception closes this connection with its message.
    template <typename Step>
    void guarded(Step&& step) noexcept;

    ConnectionHost& host_;
    EpollSet& set_;
    int fd_;
    const ConnId id_;
    const std::string peer_;
    const TcpStoreLimits& limits_;
    BufferBudget& budget_;
    std::span<char> read_buffer_;
    spdlog::logger& log_;
    RequestStream stream_;
    std::size_t stream_charged_ = 0;  ///< stream_.capacity() as charged to budget_
    OutputQueue queue_;
};

}  // namespace ptrun::rdzv::detail
