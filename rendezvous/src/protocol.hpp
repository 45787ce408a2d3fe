#pragma once
/// The TCPStore wire format (spec §1-§2): query numbering per dialect, the Request value, field
/// encoders and the request encoder. Private to ptrun_rendezvous.

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/rendezvous/dialect.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv::detail {

// torch writes integers in native byte order and only ships little-endian builds (§1.2).
static_assert(std::endian::native == std::endian::little, "the TCPStore wire is little-endian");

/// VALIDATE's magic number; on the wire: CE F7 85 3C.
inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CEu;

/// Every query either dialect can carry, independent of its number on the wire.
enum class Op : std::uint8_t {
    Validate,
    Set,
    CompareSet,
    Get,
    Add,
    Check,
    Wait,
    NumKeys,
    WatchKey,
    DeleteKey,
    Append,
    MultiGet,
    MultiSet,
    CancelWait,
    Ping,
    QueuePush,
    QueuePop,
    QueueLen,
    ListKeys,
    Barrier,
};

enum class CheckResponse : std::uint8_t { Ready = 0, NotReady = 1 };
enum class WaitResponse : std::uint8_t { StopWaiting = 0, WaitCanceled = 1 };
enum class WatchResponse : std::uint8_t {
    KeyUpdated = 0,
    KeyCreated = 1,
    KeyDeleted = 2,
    KeyCallbackRegistered = 3,
    KeyAppended = 4,
};

/// One decoded query. Field use by op: keys[0] is the key of single-key ops; CHECK/WAIT/
/// MULTI_GET/MULTI_SET use all keys; values[0] is the value of SET/APPEND/QUEUE_PUSH;
/// COMPARE_SET has values {expected, desired}; MULTI_SET has one value per key; `number` is
/// ADD's delta or BARRIER's world size; `word` is VALIDATE's magic or PING's nonce.
struct Request {
    Op op = Op::NumKeys;
    std::vector<std::string> keys;
    std::vector<std::string> values;
    std::int64_t number = 0;
    std::uint32_t word = 0;

    bool operator==(const Request&) const = default;
};

/// A peer broke the protocol; the connection must be closed. Never crosses the public API.
class ProtocolError : public StoreError {
  public:
    using StoreError::StoreError;
};

/// Upper-case query name for logs ("COMPARE_SET").
std::string_view op_name(Op op) noexcept;
/// The op for wire code `code` in `dialect` (legacy also accepts 9..12, spec §2.1 note).
std::optional<Op> decode_op(Dialect dialect, std::uint8_t code) noexcept;
/// The wire code for `op` in `dialect`, if the dialect has one.
std::optional<std::uint8_t> encode_op(Dialect dialect, Op op) noexcept;

inline void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
template <typename T>
void put_raw(std::string& out, T v) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    out.append(bytes, sizeof(T));
}
inline void put_u32(std::string& out, std::uint32_t v) { put_raw(out, v); }
inline void put_u64(std::string& out, std::uint64_t v) { put_raw(out, v); }
inline void put_i64(std::string& out, std::int64_t v) { put_raw(out, v); }
/// `bytes`/`string` field: u64 length then the bytes.
inline void put_bytes(std::string& out, std::string_view v) {
    put_u64(out, v.size());
    out.append(v);
}
template <typename T>
T load_raw(const char* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

/// `request` as `dialect` puts it on the wire; throws StoreError if the dialect has no code for
/// its op, or if MULTI_SET's keys and values differ in number.
std::string encode_request(Dialect dialect, const Request& request);

}  // namespace ptrun::rdzv::detail
