#pragma once
/// Connection: one accepted client of the TcpStoreServer (reading, parsing, queued writing).

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "asio.hpp"
#include "protocol.hpp"
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
    /// A complete request arrived on `conn`, in order. May throw ProtocolError (close `conn`).
    virtual void on_request(Connection& conn, Request&& request) = 0;
    /// `conn` was closed by close(); drop it.
    virtual void on_closed(Connection& conn) = 0;

protected:
    ~ConnectionHost() = default;
};

/// Waits for readability, then reads what the socket holds into the server thread's scratch
/// buffer and on into a RequestStream (any segmentation), hands each request to the host, and
/// writes replies from a bounded queue. No per-connection read buffer: an idle connection costs
/// a few hundred bytes, so 10,000 clients fit without touching 640 MB of buffers. Lives on the server thread only; kept
/// alive by its pending handlers and the host's table.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(ConnectionHost& host, boost::asio::ip::tcp::socket socket, ConnId id,
               std::string peer, const TcpStoreLimits& limits, spdlog::logger& log);

    /// Starts reading. Does not block.
    void start();
    /// Queues `bytes` for the client; closes the connection instead if that would exceed
    /// max_queued_bytes_per_connection (a client that does not read cannot hold memory).
    void send(std::string bytes);
    /// Closes the socket, logs `reason` (at warn if `error`), tells the host. Idempotent.
    void close(std::string_view reason, bool error);
    /// Closes the socket without telling the host (server shutdown).
    void abort() noexcept;

    ConnId id() const noexcept { return id_; }
    const std::string& peer() const noexcept { return peer_; }

private:
    /// Waits (on the reactor) until the socket is readable, then calls on_readable().
    void wait_readable();
    /// Reads until the socket would block (or a fairness cap), parses and dispatches.
    void on_readable();
    void write_queued();
    void on_written(const boost::system::error_code& ec);

    ConnectionHost& host_;
    boost::asio::ip::tcp::socket socket_;
    const ConnId id_;
    const std::string peer_;
    const TcpStoreLimits& limits_;
    spdlog::logger& log_;
    RequestStream stream_;
    std::deque<std::string> queue_;  ///< replies not yet fully written, in order
    std::size_t queued_bytes_ = 0;
    std::size_t in_flight_ = 0;  ///< entries of queue_ in the current async_write
    std::vector<boost::asio::const_buffer> write_buffers_;
    bool closed_ = false;
};

}  // namespace ptrun::rdzv::detail
