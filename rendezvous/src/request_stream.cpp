#include "request_stream.hpp"

#include <algorithm>

namespace ptrun::rdzv::detail {

namespace {
constexpr std::size_t kValidateBytes = 5;
constexpr std::size_t kCompactAbove = 64 * 1024;
/// A drained buffer larger than this is freed rather than kept for the next request.
constexpr std::size_t kKeepCapacity = 64 * 1024;
}  // namespace

/// The capacity feeding `n` bytes gives: at least twice the current one, so that reserve()
/// allocates exactly that.
static std::size_t grown_capacity(const std::string& buffer, std::size_t n) {
    const std::size_t size = buffer.size() + n;
    return size <= buffer.capacity() ? buffer.capacity() : std::max(size, 2 * buffer.capacity());
}

std::size_t RequestStream::growth_for(std::size_t n) const noexcept {
    const std::size_t grown = grown_capacity(buffer_, n);
    return grown == buffer_.capacity() ? 0 : grown - capacity();
}

void RequestStream::feed(std::string_view bytes) {
    buffer_.reserve(grown_capacity(buffer_, bytes.size()));
    buffer_.append(bytes);
}

void RequestStream::reset() noexcept {
    std::string().swap(buffer_);
    pos_ = 0;
    need_ = 1;
}

void RequestStream::consume(std::size_t n) {
    pos_ += n;
    need_ = 1;
    if (pos_ == buffer_.size()) {
        if (buffer_.capacity() > kKeepCapacity) {
            std::string().swap(buffer_);
        } else {
            buffer_.clear();
        }
        pos_ = 0;
    } else if (pos_ > kCompactAbove && pos_ * 2 > buffer_.size()) {
        buffer_.erase(0, pos_);
        pos_ = 0;
    }
}

std::optional<Request> RequestStream::next() {
    while (buffered() >= need_) {
        const std::string_view pending(buffer_.data() + pos_, buffered());
        if (!dialect_) {
            switch (detect_dialect(pending)) {
                case Detection::NeedMore: need_ = kValidateBytes; return std::nullopt;
                case Detection::Reject:
                    throw ProtocolError("first byte 0xCE: per-request-magic clients are not supported");
                case Detection::Legacy: dialect_ = Dialect::Legacy; continue;
                case Detection::Modern:
                    dialect_ = Dialect::Modern;
                    consume(kValidateBytes);
                    continue;
            }
        }
        auto parsed = parse_request(pending, *dialect_, limits_);
        switch (parsed.status) {
            case ParseResult::Status::NeedMore: need_ = parsed.size; return std::nullopt;
            case ParseResult::Status::Invalid: throw ProtocolError(parsed.error);
            case ParseResult::Status::Complete: break;
        }
        if (parsed.request.op == Op::Validate) {
            throw ProtocolError("VALIDATE is only allowed as the first query of a connection");
        }
        consume(parsed.size);
        return std::move(parsed.request);
    }
    return std::nullopt;
}

}  // namespace ptrun::rdzv::detail
