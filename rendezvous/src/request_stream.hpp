#pragma once
/// RequestStream: one connection's incremental, order-preserving request decoder.

#include <optional>
#include <string>
#include <string_view>

#include "request_parser.hpp"

namespace ptrun::rdzv::detail {

/// Accumulates a connection's bytes (split anywhere) and yields its requests in order. Detects
/// the dialect on the first bytes and swallows the modern VALIDATE. Holds at most one partial
/// request (bounded by max_request_bytes) plus whatever was fed since the last drain.
class RequestStream {
public:
    explicit RequestStream(const TcpStoreLimits& limits) : limits_(limits) {}

    /// Appends received bytes. Does not parse.
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    /// The next complete request, or nullopt until more bytes arrive. Throws ProtocolError on
    /// malformed input, a broken limit, a wrong/late VALIDATE or an unknown dialect; the
    /// stream is then unusable and the connection must be closed.
    std::optional<Request> next();
    /// Known after the first bytes; nullopt before.
    std::optional<Dialect> dialect() const noexcept { return dialect_; }
    /// Bytes received but not yet returned as requests.
    std::size_t buffered() const noexcept { return buffer_.size() - pos_; }

private:
    void consume(std::size_t n);

    const TcpStoreLimits& limits_;
    std::string buffer_;
    std::size_t pos_ = 0;   ///< start of the unparsed bytes
    std::size_t need_ = 1;  ///< unparsed bytes required before parsing can progress
    std::optional<Dialect> dialect_;
};

}  // namespace ptrun::rdzv::detail
