#pragma once
/// Framing of the store's replies (spec §2.1's reply column): how many bytes the reply to a
/// request occupies at the front of a buffer. Pure functions; the relay reads its upstream
/// replies with them.

#include <cstddef>
#include <optional>
#include <string_view>

#include "protocol.hpp"

namespace ptrun::rdzv::detail {

/// Whether the server answers `op` at all (SET, APPEND, MULTI_SET, QUEUE_PUSH and VALIDATE
/// have no reply).
bool has_reply(Op op) noexcept;

/// The size of the complete reply to a request `op` (with `keys` keys: MULTI_GET) at the front
/// of `bytes`, or nullopt while more is needed. Throws ProtocolError when a length in it exceeds
/// `max_reply_bytes` (a hostile or broken peer: the caller closes the connection) or `op` has
/// no reply.
std::optional<std::size_t> reply_size(std::string_view bytes, Op op, std::size_t keys,
                                      std::size_t max_reply_bytes);

/// Walks past one reply of a request `op` (with `keys` keys) as its bytes arrive, holding none
/// of them: what the relay does with a reply too large to hold for a client it dropped.
class ReplySkipper {
  public:
    ReplySkipper(Op op, std::size_t keys);
    /// Consumes what belongs to the reply from the front of `bytes`; returns how many bytes.
    std::size_t consume(std::string_view bytes);
    bool done() const noexcept { return fields_ == 0 && skip_ == 0 && !counting_ && !in_header_; }

  private:
    std::size_t fields_ = 0;  ///< `bytes` fields still to come after the current one
    std::uint64_t skip_ = 0;  ///< bytes of fixed fields or of a field's body still to skip
    char header_[8]{};        ///< a length (or QUEUE_POP's / LIST_KEYS' count) being read
    std::size_t header_have_ = 0;
    bool in_header_ = false;  ///< reading a field's length
    bool counting_ = false;   ///< reading the i64 that says how many fields follow
    bool pop_ = false;        ///< QUEUE_POP: the count says whether one field follows
};

}  // namespace ptrun::rdzv::detail
