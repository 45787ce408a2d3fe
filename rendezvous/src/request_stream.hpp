#pragma once
/// RequestStream: one connection's incremental, order-preserving request decoder.

#include <optional>
#include <string>
#include <string_view>

#include "request_parser.hpp"

namespace ptrun::rdzv::detail {

/// Accumulates a connection's bytes (split anywhere) and yields its requests in order. Detects
/// the dialect on the first bytes and swallows the modern VALIDATE. Holds at most one partial
/// request (bounded by max_request_bytes) plus whatever was fed since the last drain; a buffer
/// grown for a big request is freed once it is drained.
class RequestStream {
  public:
    explicit RequestStream(const TcpStoreLimits& limits) : limits_(limits) {}

    /// Appends received bytes (growing the buffer by exactly growth_for(bytes.size()): at once
    /// to what the pending request is known to need, else geometrically). Does not parse.
    void feed(std::string_view bytes);
    /// How much capacity() would grow if `n` more bytes were fed now.
    std::size_t growth_for(std::size_t n) const noexcept;
    /// Bytes feed() can take without allocating.
    std::size_t room() const noexcept;
    /// Bytes the buffer has allocated on the heap (what the connection charges to the server's
    /// budget; 0 while the string's inline buffer holds it all).
    std::size_t capacity() const noexcept {
        return buffer_.capacity() > kInlineCapacity ? buffer_.capacity() : 0;
    }
    /// The next complete request, or nullopt until more bytes arrive. Throws ProtocolError on
    /// malformed input, a broken limit, a wrong/late VALIDATE or an unknown dialect; the
    /// stream is then unusable and the connection must be closed.
    std::optional<Request> next();
    /// Known after the first bytes; nullopt before.
    std::optional<Dialect> dialect() const noexcept { return dialect_; }
    /// Drops everything buffered and frees the buffer (the connection is closing).
    void reset() noexcept;
    /// Bytes received but not yet returned as requests.
    std::size_t buffered() const noexcept { return buffer_.size() - pos_; }

  private:
    static inline const std::size_t kInlineCapacity = std::string().capacity();

    void consume(std::size_t n);
    /// The buffer's capacity after feeding `n` more bytes.
    std::size_t grown_capacity(std::size_t n) const noexcept;

    const TcpStoreLimits& limits_;
    std::string buffer_;
    std::size_t pos_ = 0;    ///< start of the unparsed bytes
    std::size_t need_ = 1;   ///< unparsed bytes required before parsing can progress
    ScanProgress progress_;  ///< of the pending request, so that each piece is walked once
    std::optional<Dialect> dialect_;
};

}  // namespace ptrun::rdzv::detail
