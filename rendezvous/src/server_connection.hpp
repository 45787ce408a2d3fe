#pragma once
/// Connection: one accepted client of the TcpStoreServer (reading, parsing, queued writing).

#include <deque>
#include <memory>
#include <string>

#include "epoll_set.hpp"
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

/// A non-blocking socket in the server's EpollSet. When it is readable, one recv into a
/// RequestStream (any segmentation) and each complete request goes to the host; replies are
/// written at once and only what the kernel does not take is queued (bounded), with output
/// watched until the queue drains. The read buffer starts at 1 KiB and grows (to 64 KiB) only
/// for a client that fills it: 10,000 idle clients cost ~10 MB, not the 640 MB (and page
/// faults) of a fixed 64 KiB buffer each. Server thread only; owned by the host's table.
class Connection {
public:
    /// Takes ownership of `fd` (non-blocking, close-on-exec) and adds it to `set` under `id`.
    Connection(ConnectionHost& host, EpollSet& set, int fd, ConnId id, std::string peer,
               const TcpStoreLimits& limits, spdlog::logger& log);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// The socket is readable (or hung up): reads once and hands over every complete request.
    void on_readable();
    /// The socket is writable: writes what is queued.
    void on_writable();
    /// Queues `bytes` for the client; resets the connection instead if that would exceed
    /// max_queued_bytes_per_connection (a client that does not read cannot hold memory).
    void send(std::string bytes);
    /// Closes the socket, logs `reason` (at warn if `error`), tells the host. Idempotent.
    void close(std::string_view reason, bool error);
    /// Closes the socket without telling the host (server shutdown).
    void abort() noexcept;

    ConnId id() const noexcept { return id_; }
    bool closed() const noexcept { return fd_ < 0; }
    const std::string& peer() const noexcept { return peer_; }

private:
    /// Writes from the queue until it is empty or the socket is full; false if it closed.
    bool flush();
    void fail_write(int error);

    ConnectionHost& host_;
    EpollSet& set_;
    int fd_;
    const ConnId id_;
    const std::string peer_;
    const TcpStoreLimits& limits_;
    spdlog::logger& log_;
    RequestStream stream_;
    std::unique_ptr<char[]> read_buffer_;  ///< uninitialised: only what recv writes is touched
    std::size_t read_capacity_;
    std::deque<std::string> queue_;  ///< replies not yet fully written, in order
    std::size_t queued_bytes_ = 0;
    std::size_t front_written_ = 0;  ///< bytes of queue_.front() already written
};

}  // namespace ptrun::rdzv::detail
