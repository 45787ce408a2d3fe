#include "server_connection.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

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
}  // namespace

Connection::Connection(ConnectionHost& host, boost::asio::ip::tcp::socket socket, ConnId id,
                       std::string peer, const TcpStoreLimits& limits, spdlog::logger& log)
    : host_(host),
      socket_(std::move(socket)),
      id_(id),
      peer_(std::move(peer)),
      limits_(limits),
      log_(log),
      stream_(limits),
      read_buffer_(new char[kInitialReadBytes]),
      read_capacity_(kInitialReadBytes) {}

void Connection::start() {
    boost::system::error_code ignored;
    socket_.non_blocking(true, ignored);  // send()'s direct write must never block the server
    read_some();
}

void Connection::read_some() {
    socket_.async_read_some(boost::asio::buffer(read_buffer_.get(), read_capacity_),
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        std::size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(const boost::system::error_code& ec, std::size_t n) {
    if (closed_) return;
    if (ec) {
        const bool normal = ec == boost::asio::error::eof ||
                            ec == boost::asio::error::connection_reset;
        close(normal ? "closed by the client" : ec.message(), !normal);
        return;
    }
    stream_.feed(std::string_view(read_buffer_.get(), n));
    if (n == read_capacity_ && read_capacity_ < kMaxReadBytes) {  // a bulk sender: read more at once
        read_capacity_ = std::min(read_capacity_ * 8, kMaxReadBytes);
        read_buffer_.reset(new char[read_capacity_]);
    }
    try {
        while (!closed_) {
            auto request = stream_.next();
            if (!request) break;
            host_.on_request(*this, std::move(*request));
        }
    } catch (const std::exception& e) {  // ProtocolError, or bad_alloc on a huge reply
        close(e.what(), true);
        return;
    }
    if (!closed_) read_some();
}

void Connection::send(std::string bytes) {
    if (closed_) return;
    if (queue_.empty() && bytes.size() <= kDirectWriteMaxBytes) {
        // Nothing queued: write now, without an async operation and its completion handler (the
        // common case: a small reply into an empty socket buffer). Only what the kernel does not
        // take is queued. Large replies always take the queue, so that a client that does not
        // read is cut off before megabytes pile up in its kernel buffer as well.
        boost::system::error_code ec;
        const std::size_t n = socket_.write_some(boost::asio::buffer(bytes), ec);
        if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) {
            close("write failed: " + ec.message(), ec != boost::asio::error::broken_pipe &&
                                                       ec != boost::asio::error::connection_reset);
            return;
        }
        if (!ec && n == bytes.size()) return;
        if (!ec) bytes.erase(0, n);
    }
    if (queued_bytes_ + bytes.size() > limits_.max_queued_bytes_per_connection) {
        close("more than " + std::to_string(limits_.max_queued_bytes_per_connection) +
                  " bytes of replies queued (client not reading)",
              true);
        return;
    }
    queued_bytes_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (in_flight_ == 0) write_queued();
}

void Connection::write_queued() {
    write_buffers_.clear();
    in_flight_ = std::min(queue_.size(), kMaxBuffersPerWrite);
    for (std::size_t i = 0; i < in_flight_; ++i) write_buffers_.push_back(boost::asio::buffer(queue_[i]));
    boost::asio::async_write(socket_, write_buffers_,
                             [self = shared_from_this()](const boost::system::error_code& ec,
                                                         std::size_t) { self->on_written(ec); });
}

void Connection::on_written(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) {
        close("write failed: " + ec.message(), ec != boost::asio::error::broken_pipe &&
                                                   ec != boost::asio::error::connection_reset);
        return;
    }
    for (; in_flight_ > 0; --in_flight_) {
        queued_bytes_ -= queue_.front().size();
        queue_.pop_front();
    }
    if (!queue_.empty()) write_queued();
}

void Connection::close(std::string_view reason, bool error) {
    if (closed_) return;
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
    closed_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
}

}  // namespace ptrun::rdzv::detail
