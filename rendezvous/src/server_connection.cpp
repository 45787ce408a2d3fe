#include "server_connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace ptrun::rdzv::detail {
namespace {
constexpr std::size_t kMaxBuffersPerWrite = 64;
constexpr std::size_t kInitialReadBytes = 1024;
constexpr std::size_t kMaxReadBytes = 64 * 1024;
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
                       const TcpStoreLimits& limits, spdlog::logger& log)
    : host_(host),
      set_(set),
      fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      limits_(limits),
      log_(log),
      stream_(limits),
      read_buffer_(new char[kInitialReadBytes]),
      read_capacity_(kInitialReadBytes) {
    try {
        set_.add(fd_, id_);
    } catch (...) {
        ::close(fd_);
        throw;
    }
}

Connection::~Connection() { abort(); }

void Connection::on_readable() {
    if (closed()) return;
    const ssize_t n = ::recv(fd_, read_buffer_.get(), read_capacity_, 0);
    if (n == 0) {
        close("closed by the client", false);
        return;
    }
    if (n < 0) {
        const int error = errno;
        if (!would_block(error)) close(std::strerror(error), !peer_gone(error));
        return;
    }
    const auto got = static_cast<std::size_t>(n);
    stream_.feed(std::string_view(read_buffer_.get(), got));
    if (got == read_capacity_ && read_capacity_ < kMaxReadBytes) {  // a bulk sender: read more
        read_capacity_ = std::min(read_capacity_ * 8, kMaxReadBytes);
        read_buffer_.reset(new char[read_capacity_]);
    }
    try {
        while (!closed()) {
            auto request = stream_.next();
            if (!request) break;
            host_.on_request(*this, std::move(*request));
        }
    } catch (const std::exception& e) {  // ProtocolError, or bad_alloc on a huge reply
        close(e.what(), true);
    }
}

void Connection::send(std::string bytes) {
    if (closed()) return;
    const bool was_empty = queue_.empty();
    bool socket_full = false;
    if (was_empty && bytes.size() <= kDirectWriteMaxBytes) {
        // Nothing queued: write now (the common case: a small reply into an empty socket
        // buffer); only what the kernel does not take is queued. Large replies always take the
        // queue, so that a client that does not read is cut off before megabytes pile up in its
        // kernel buffer as well.
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && !would_block(errno)) {
            fail_write(errno);
            return;
        }
        if (n == static_cast<ssize_t>(bytes.size())) return;
        if (n > 0) bytes.erase(0, static_cast<std::size_t>(n));
        socket_full = true;
    }
    if (queued_bytes_ + bytes.size() > limits_.max_queued_bytes_per_connection) {
        // A reset, not a FIN: drop the megabytes the kernel still holds for this client too.
        const linger reset{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close("more than " + std::to_string(limits_.max_queued_bytes_per_connection) +
                  " bytes of replies queued (client not reading)",
              true);
        return;
    }
    queued_bytes_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (!was_empty) return;  // output is already watched
    if (!socket_full && !flush()) return;
    if (!queue_.empty()) set_.watch_output(fd_, id_, true);
}

void Connection::on_writable() {
    if (closed() || queue_.empty()) return;
    if (flush() && queue_.empty()) set_.watch_output(fd_, id_, false);
}

bool Connection::flush() {
    while (!queue_.empty()) {
        std::array<iovec, kMaxBuffersPerWrite> iov{};
        std::size_t count = 0;
        for (auto it = queue_.begin(); it != queue_.end() && count < iov.size(); ++it, ++count) {
            const std::size_t skip = count == 0 ? front_written_ : 0;
            iov[count].iov_base = it->data() + skip;
            iov[count].iov_len = it->size() - skip;
        }
        msghdr message{};
        message.msg_iov = iov.data();
        message.msg_iovlen = count;
        const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
        if (n < 0) {
            if (would_block(errno)) return true;
            fail_write(errno);
            return false;
        }
        auto left = static_cast<std::size_t>(n);
        while (left > 0) {
            const std::size_t rest = queue_.front().size() - front_written_;
            if (left < rest) {
                front_written_ += left;
                return true;  // the kernel took part of it: the socket is full
            }
            left -= rest;
            queued_bytes_ -= queue_.front().size();
            queue_.pop_front();
            front_written_ = 0;
        }
    }
    return true;
}

void Connection::fail_write(int error) {
    close(std::string("write failed: ") + std::strerror(error), !peer_gone(error));
}

void Connection::close(std::string_view reason, bool error) {
    if (closed()) return;
    abort();
    if (error) {
        log_.warn("rdzv store: closing connection #{} from {} ({}): {}", id_, peer_,
                  dialect_name(stream_.dialect()), reason);
    } else {
        log_.debug("rdzv store: connection #{} from {} closed: {}", id_, peer_, reason);
    }
    host_.on_closed(*this);
}

void Connection::abort() noexcept {
    if (fd_ < 0) return;
    ::close(fd_);  // also leaves the epoll set (the only reference to the socket)
    fd_ = -1;
}

}  // namespace ptrun::rdzv::detail
