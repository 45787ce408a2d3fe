#include "server_connection.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>

namespace ptrun::rdzv::detail {
namespace {
constexpr std::size_t kMaxBuffersPerWrite = 64;
/// Bytes offered to one sendmsg. On loopback the kernel hands data to a reading peer as it
/// copies, so one unbounded call can move hundreds of megabytes while every other client waits;
/// the rest goes when the socket is next writable, after the other ready connections.
constexpr std::size_t kMaxBytesPerWrite = 256 * 1024;
constexpr std::size_t kDirectWriteMaxBytes = 64 * 1024;

std::string_view dialect_name(const std::optional<Dialect>& d) {
    if (!d) return "undetected";
    return *d == Dialect::Legacy ? "legacy" : "modern";
}

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

/// A peer that went away (not worth a warning).
bool peer_gone(int error) { return error == ECONNRESET || error == EPIPE; }
}  // namespace

Connection::Connection(ConnectionHost& host, EpollSet& set, int fd, ConnId id, std::string peer,
                       const TcpStoreLimits& limits, BufferBudget& budget,
                       std::span<char> read_buffer, spdlog::logger& log)
    : host_(host),
      set_(set),
      fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      limits_(limits),
      budget_(budget),
      read_buffer_(read_buffer),
      log_(log),
      stream_(limits),
      queue_(budget) {
    set_.add(fd_, id_);  // on failure the caller closes fd
    charge_stream();
}

Connection::~Connection() { abort(); }

template <typename Step>
void Connection::guarded(Step&& step) noexcept {
    // The messages allocate nothing: after a bad_alloc, closing must not need memory.
    try {
        step();
    } catch (const std::bad_alloc&) {
        close("out of memory while serving it (a failed allocation)", true);
    } catch (const std::exception& e) {  // ProtocolError, a refused request
        close(e.what(), true);
    } catch (...) {
        close("unexpected exception", true);
    }
}

void Connection::on_readable() noexcept {
    if (closed()) return;
    guarded([this] { read_and_serve(); });
}

void Connection::read_and_serve() {
    const ssize_t n = ::recv(fd_, read_buffer_.data(), read_buffer_.size(), 0);
    if (n == 0) {
        close("closed by the client", false);
        return;
    }
    if (n < 0) {
        const int error = errno;
        if (!would_block(error)) close(std::strerror(error), !peer_gone(error));
        return;
    }
    std::string_view data(read_buffer_.data(), static_cast<std::size_t>(n));
    while (!data.empty() && !closed()) {
        // What fits goes first: serving it may drain the buffer (a big request followed by the
        // start of the next), so that the rest needs no bigger one.
        const std::size_t room = stream_.room();
        const std::size_t take = room > 0 ? std::min(data.size(), room) : data.size();
        if (const std::size_t growth = stream_.growth_for(take); growth > 0) {
            if (!host_.make_room(*this, growth, "a partial request")) return;
        }
        stream_.feed(data.substr(0, take));
        data.remove_prefix(take);
        charge_stream();
        while (!closed()) {
            auto request = stream_.next();
            charge_stream();
            if (!request) break;
            host_.on_request(*this, std::move(*request));
        }
    }
}

void Connection::charge_stream() noexcept {
    const std::size_t now = stream_.capacity();
    if (now > stream_charged_) budget_.charge(now - stream_charged_);
    if (now < stream_charged_) budget_.release(stream_charged_ - now);
    stream_charged_ = now;
}

void Connection::send(Outgoing&& reply) noexcept {
    if (closed()) return;
    guarded([&] { queue_reply(std::move(reply)); });
}

void Connection::queue_reply(Outgoing&& reply) {
    const bool was_empty = queue_.empty();
    bool socket_full = false;
    if (was_empty && reply.shared.empty() && reply.bytes.size() <= kDirectWriteMaxBytes) {
        // Nothing queued: write now (the common case: a small reply into an empty socket
        // buffer); only what the kernel does not take is queued. Large replies always take the
        // queue, so that a client that does not read is cut off before megabytes pile up in its
        // kernel buffer as well.
        const ssize_t n = ::send(fd_, reply.bytes.data(), reply.bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && !would_block(errno)) {
            fail_write(errno);
            return;
        }
        if (n == static_cast<ssize_t>(reply.bytes.size())) return;
        if (n > 0) reply.bytes.erase(0, static_cast<std::size_t>(n));
        socket_full = true;
    }
    const std::size_t size = reply.size();
    // A reply to a client that has read everything may be as large as the budget allows (a
    // GET of a big value); a client that lets replies pile up is cut off.
    if (!was_empty && queue_.payload() + size > limits_.max_queued_bytes_per_connection) {
        reset("more than " + std::to_string(limits_.max_queued_bytes_per_connection) +
              " bytes of replies queued (client not reading)");
        return;
    }
    queue_.push(std::move(reply));
    if (!host_.make_room(*this, 0, "a reply")) return;
    if (!was_empty) return;  // output is already watched
    if (!socket_full && !flush()) return;
    if (!queue_.empty()) set_.watch_output(fd_, id_, true);
}

void Connection::on_writable() noexcept {
    if (closed() || queue_.empty()) return;
    guarded([this] {
        if (flush() && queue_.empty()) set_.watch_output(fd_, id_, false);
    });
}

bool Connection::flush() {
    std::array<iovec, kMaxBuffersPerWrite> iov{};
    msghdr message{};
    message.msg_iov = iov.data();
    message.msg_iovlen = queue_.gather(iov.data(), iov.size(), kMaxBytesPerWrite);
    const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (n < 0) {
        if (would_block(errno)) return true;
        fail_write(errno);
        return false;
    }
    queue_.consume(static_cast<std::size_t>(n));
    return true;
}

void Connection::fail_write(int error) {
    close(std::string("write failed: ") + std::strerror(error), !peer_gone(error));
}

void Connection::reset(std::string_view reason) noexcept {
    if (closed()) return;
    const linger hard{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    close(reason, true);
}

void Connection::close(std::string_view reason, bool error) noexcept {
    if (closed()) return;
    abort();
    try {
        if (error) {
            log_.warn("rdzv store: closing connection #{} from {} ({}): {}", id_, peer_,
                      dialect_name(stream_.dialect()), reason);
        } else {
            log_.debug("rdzv store: connection #{} from {} closed: {}", id_, peer_, reason);
        }
    } catch (...) {  // out of memory for the log line: the connection is closed all the same
    }
    host_.on_closed(*this);
}

void Connection::abort() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);  // also leaves the epoll set (the only reference to the socket)
        fd_ = -1;
    }
    queue_.clear();
    stream_.reset();
    charge_stream();
}

}  // namespace ptrun::rdzv::detail
