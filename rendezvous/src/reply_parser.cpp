#include "reply_parser.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace ptrun::rdzv::detail {
namespace {

/// Walks fixed fields and `bytes` fields of a reply, stopping at the first that is incomplete.
class Cursor {
  public:
    Cursor(std::string_view bytes, std::size_t max) : bytes_(bytes), max_(max) {}

    bool fixed(std::size_t n) {
        if (!ok_ || bytes_.size() - at_ < n) return ok_ = false;
        at_ += n;
        return true;
    }
    bool i64(std::int64_t& v) {
        if (!ok_ || bytes_.size() - at_ < 8) return ok_ = false;
        v = load_raw<std::int64_t>(bytes_.data() + at_);
        at_ += 8;
        return true;
    }
    bool field() {  // u64 length then the bytes
        if (!ok_ || bytes_.size() - at_ < 8) return ok_ = false;
        const auto n = load_raw<std::uint64_t>(bytes_.data() + at_);
        if (n > max_ || at_ + 8 + n > max_) {
            throw ProtocolError("a reply of more than " + std::to_string(max_) + " bytes");
        }
        at_ += 8;
        return fixed(static_cast<std::size_t>(n));
    }
    std::optional<std::size_t> size() const {
        return ok_ ? std::optional<std::size_t>(at_) : std::nullopt;
    }

  private:
    std::string_view bytes_;
    std::size_t max_;
    std::size_t at_ = 0;
    bool ok_ = true;
};

}  // namespace

bool has_reply(Op op) noexcept {
    switch (op) {
        case Op::Validate:
        case Op::Set:
        case Op::Append:
        case Op::MultiSet:
        case Op::QueuePush:
            return false;
        default:
            return true;
    }
}

std::optional<std::size_t> reply_size(std::string_view bytes, Op op, std::size_t keys,
                                      std::size_t max_reply_bytes) {
    Cursor c(bytes, max_reply_bytes);
    switch (op) {
        case Op::Check:
        case Op::Wait:
        case Op::WatchKey:
        case Op::CancelWait:
        case Op::Barrier:
            c.fixed(1);
            break;
        case Op::Ping:
            c.fixed(4);
            break;
        case Op::Add:
        case Op::NumKeys:
        case Op::DeleteKey:
        case Op::QueueLen:
            c.fixed(8);
            break;
        case Op::CompareSet:
        case Op::Get:
            c.field();
            break;
        case Op::MultiGet:
            for (std::size_t i = 0; i < keys; ++i) c.field();
            break;
        case Op::QueuePop: {
            std::int64_t before = 0;
            if (c.i64(before) && before > 0) c.field();
            break;
        }
        case Op::ListKeys: {
            std::int64_t n = 0;
            if (!c.i64(n)) break;
            if (n < 0 || static_cast<std::uint64_t>(n) > max_reply_bytes / 8) {
                throw ProtocolError("a LIST_KEYS reply of " + std::to_string(n) + " keys");
            }
            for (std::int64_t i = 0; i < n; ++i) c.field();
            break;
        }
        default:
            throw ProtocolError(std::string(op_name(op)) + " has no reply");
    }
    return c.size();
}

ReplySkipper::ReplySkipper(Op op, std::size_t keys) {
    switch (op) {
        case Op::CompareSet:
        case Op::Get:
            fields_ = 1;
            break;
        case Op::MultiGet:
            fields_ = keys;
            break;
        case Op::QueuePop:
            counting_ = pop_ = true;
            break;
        case Op::ListKeys:
            counting_ = true;
            break;
        case Op::Add:
        case Op::NumKeys:
        case Op::DeleteKey:
        case Op::QueueLen:
            skip_ = 8;
            break;
        case Op::Ping:
            skip_ = 4;
            break;
        default:
            skip_ = 1;
            break;
    }
    in_header_ = !counting_ && skip_ == 0 && fields_ > 0;
    if (in_header_) --fields_;
}

std::size_t ReplySkipper::consume(std::string_view bytes) {
    std::size_t at = 0;
    while (at < bytes.size() && !done()) {
        if (skip_ > 0) {
            const auto n = std::min<std::uint64_t>(skip_, bytes.size() - at);
            skip_ -= n;
            at += static_cast<std::size_t>(n);
            if (skip_ == 0 && fields_ > 0) {
                in_header_ = true;
                --fields_;
            }
            continue;
        }
        if (in_header_ || counting_) {
            const auto n = std::min(sizeof header_ - header_have_, bytes.size() - at);
            std::memcpy(header_ + header_have_, bytes.data() + at, n);
            header_have_ += n;
            at += n;
            if (header_have_ < sizeof header_) continue;
            header_have_ = 0;
            const auto value = load_raw<std::uint64_t>(header_);
            if (counting_) {
                counting_ = false;
                const auto count = static_cast<std::int64_t>(value);
                fields_ = count <= 0 ? 0 : pop_ ? 1 : static_cast<std::size_t>(count);
                if (fields_ > 0) {
                    in_header_ = true;
                    --fields_;
                }
            } else {
                in_header_ = false;
                skip_ = value;
                if (skip_ == 0 && fields_ > 0) {
                    in_header_ = true;
                    --fields_;
                }
            }
        }
    }
    return at;
}

}  // namespace ptrun::rdzv::detail
