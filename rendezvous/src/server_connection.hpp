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

/// Reads with async_read_some into a RequestStream (any segmentation), hands each request to
/// the host, and writes replies from a bounded queue. The read buffer starts at 1 KiB and grows
/// (to 64 KiB) only for a client that fills it: 10,000 idle clients cost ~10 MB, not the 640 MB
/// (and page faults) of a fixed 64 KiB buffer each. async_read_some, not async_wait + read:
/// Asio then needs one recv per request and no epoll_ctl. Lives on the server thread only; kept
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
    void read_some();
    void on_read(const boost::system::error_code& ec, std::size_t n);
    void write_queued();
    void on_written(const boost::system::error_code& ec);

    ConnectionHost& host_;
    boost::asio::ip::tcp::socket socket_;
    const ConnId id_;
    const std::string peer_;
    const TcpStoreLimits& limits_;
    spdlog::logger& log_;
    RequestStream stream_;
    std::unique_ptr<char[]> read_buffer_;  ///< uninitialised: only what recv writes is touched
    std::size_t read_capacity_;
    std::deque<std::string> queue_;  ///< replies not yet fully written, in order
    std::size_t queued_bytes_ = 0;
    std::size_t in_flight_ = 0;  ///< entries of queue_ in the current async_write
    std::vector<boost::asio::const_buffer> write_buffers_;
    bool closed_ = false;
};

}  // namespace ptrun::rdzv::detail
