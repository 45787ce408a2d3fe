#include "request_stream.hpp"

#include <algorithm>

namespace ptrun::rdzv::detail {

namespace {
constexpr std::size_t kValidateBytes = 5;
constexpr std::size_t kCompactAbove = 64 * 1024;
/// A drained buffer larger than this is freed rather than kept for the next request.
constexpr std::size_t kKeepCapacity = 64 * 1024;
}  // namespace

std::size_t RequestStream::room() const noexcept { return buffer_.capacity() - buffered(); }

std::size_t RequestStream::grown_capacity(std::size_t n) const noexcept {
    const std::size_t required = buffered() + n;
    if (required <= buffer_.capacity()) return buffer_.capacity();  // fits, once compacted
    // At once to the size the pending request is known to need (a big value arrives without
    // the buffer being copied as it grows), else geometric.
    return std::max({required, need_, 2 * buffer_.capacity()});
}

std::size_t RequestStream::growth_for(std::size_t n) const noexcept {
    const std::size_t grown = grown_capacity(n);
    return grown == buffer_.capacity() ? 0 : grown - capacity();
}

void RequestStream::feed(std::string_view bytes) {
    if (buffer_.size() + bytes.size() > buffer_.capacity()) {
        const std::size_t grown = grown_capacity(bytes.size());
        if (grown == buffer_.capacity()) {
            buffer_.erase(0, pos_);  // the consumed prefix makes the room
        } else {                     // only the unconsumed bytes move to the new buffer
            std::string bigger;
            bigger.reserve(grown);
            bigger.append(buffer_, pos_);
            buffer_.swap(bigger);
        }
        pos_ = 0;
    }
    buffer_.append(bytes);
}

void RequestStream::reset() noexcept {
    std::string().swap(buffer_);
    pos_ = 0;
    need_ = 1;
    progress_ = {};
}

void RequestStream::consume(std::size_t n) {
    pos_ += n;
    need_ = 1;
    progress_ = {};
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
                case Detection::NeedMore:
                    need_ = kValidateBytes;
                    return std::nullopt;
                case Detection::Reject:
                    throw ProtocolError(
                        "first byte 0xCE: per-request-magic clients are not supported");
                case Detection::Legacy:
                    dialect_ = Dialect::Legacy;
                    continue;
                case Detection::Modern:
                    dialect_ = Dialect::Modern;
                    consume(kValidateBytes);
                    continue;
            }
        }
        auto parsed = parse_request(pending, *dialect_, limits_, &progress_);
        switch (parsed.status) {
            case ParseResult::Status::NeedMore:
                need_ = parsed.size;
                return std::nullopt;
            case ParseResult::Status::Invalid:
                throw ProtocolError(parsed.error);
            case ParseResult::Status::Complete:
                break;
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
