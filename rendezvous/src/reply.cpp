#include "reply.hpp"

#include "protocol.hpp"

namespace ptrun::rdzv::detail {

std::size_t Outgoing::size() const noexcept {
    std::size_t n = bytes.size();
    for (const auto& part : shared) n += part.blob->bytes.size() + part.after.size();
    return n;
}

std::string Outgoing::flatten() const {
    std::string all = bytes;
    for (const auto& part : shared) {
        all += part.blob->bytes;
        all += part.after;
    }
    return all;
}

void ReplyBuilder::u8(std::uint8_t v) { put_u8(tail(), v); }

void ReplyBuilder::i64(std::int64_t v) { put_i64(tail(), v); }

void ReplyBuilder::field(std::string_view v) { put_bytes(tail(), v); }

void ReplyBuilder::field(const BlobPtr& value) {
    const std::size_t n = value ? value->bytes.size() : 0;
    if (n == 0 || (n < kShareFromBytes && copied_ + n <= kMaxCopyBytes)) {
        copied_ += n;
        put_bytes(tail(), n == 0 ? std::string_view() : value->bytes);
        return;
    }
    put_u64(tail(), n);
    out_.shared.push_back(SharedPart{value, {}});
}

Outgoing reply_u8(ConnId to, std::uint8_t v) { return {to, std::string(1, static_cast<char>(v))}; }

Outgoing reply_i64(ConnId to, std::int64_t v) {
    Outgoing o(to, {});
    put_i64(o.bytes, v);
    return o;
}

}  // namespace ptrun::rdzv::detail
