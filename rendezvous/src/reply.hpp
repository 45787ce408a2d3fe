#pragma once
/// Replies as the store produces them: owned bytes interleaved with stored values written by
/// reference (a GET or MULTI_GET of megabytes copies nothing and is written from the stored value).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wait_registry.hpp"

namespace ptrun::rdzv::detail {

/// One stored value. While anything but the store holds it (a queued reply), it is immutable:
/// the store changes a value in place only while it holds the sole reference.
struct Blob {
    std::string bytes;
    /// Output queues referencing it; the buffer budget charges it once while this is > 0.
    std::uint32_t queued = 0;
};
using BlobPtr = std::shared_ptr<Blob>;

/// A stored value written by reference, then `after` (owned bytes that follow it).
struct SharedPart {
    BlobPtr blob;
    std::string after;
};

/// Bytes to deliver to a connection (a reply, a wake-up or a watch notification): `bytes`, then
/// each of `shared` in order.
struct Outgoing {
    Outgoing(ConnId to_, std::string bytes_) : to(to_), bytes(std::move(bytes_)) {}

    ConnId to;
    std::string bytes;
    std::vector<SharedPart> shared;

    /// Bytes the client receives.
    std::size_t size() const noexcept;
    /// All of it as one string (tests and the fuzzer; copies).
    std::string flatten() const;
};

/// A one-byte reply (a CheckResponse, WaitResponse or WatchResponse) to `to`.
Outgoing reply_u8(ConnId to, std::uint8_t v);
/// An `i64` reply (ADD's result, a count) to `to`.
Outgoing reply_i64(ConnId to, std::int64_t v);

/// Builds one Outgoing: small values are copied, large ones (and everything once a reply has
/// copied kMaxCopyBytes) are referenced, so building a reply costs O(fields), never O(bytes).
class ReplyBuilder {
  public:
    /// Values this large or larger are always referenced.
    static constexpr std::size_t kShareFromBytes = 16 * 1024;
    /// Bytes of values one reply copies at most; later values are referenced whatever their size.
    static constexpr std::size_t kMaxCopyBytes = 1024 * 1024;

    explicit ReplyBuilder(ConnId to) : out_(to, {}) {}

    void u8(std::uint8_t v);
    void i64(std::int64_t v);
    /// A `bytes` field: u64 length then the bytes (copied).
    void field(std::string_view v);
    /// A `bytes` field holding a stored value (referenced unless it is small; null = empty).
    void field(const BlobPtr& value);
    Outgoing take() && { return std::move(out_); }

  private:
    std::string& tail() { return out_.shared.empty() ? out_.bytes : out_.shared.back().after; }

    Outgoing out_;
    std::size_t copied_ = 0;
};

}  // namespace ptrun::rdzv::detail
