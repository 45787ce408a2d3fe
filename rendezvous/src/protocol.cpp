#include "protocol.hpp"

#include <array>

namespace ptrun::rdzv::detail {
namespace {

constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::Barrier) + 1;
constexpr std::uint8_t kNone = 0xFF;

// Legacy L1 (1.13/2.0, captured) plus the harmless 2.1-dev codes 9..12 (spec §2.1).
constexpr std::array<Op, 13> kLegacyOps = {
    Op::Set,      Op::CompareSet, Op::Get,        Op::Add,       Op::Check,
    Op::Wait,     Op::NumKeys,    Op::WatchKey,   Op::DeleteKey, Op::Append,
    Op::MultiGet, Op::MultiSet,   Op::CancelWait,
};
// Modern (2.2+): the enum order itself, append-only; WATCH_KEY does not exist.
constexpr std::array<Op, 19> kModernOps = {
    Op::Validate, Op::Set,      Op::CompareSet, Op::Get,       Op::Add,
    Op::Check,    Op::Wait,     Op::NumKeys,    Op::DeleteKey, Op::Append,
    Op::MultiGet, Op::MultiSet, Op::CancelWait, Op::Ping,      Op::QueuePush,
    Op::QueuePop, Op::QueueLen, Op::ListKeys,   Op::Barrier,
};

template <std::size_t N>
constexpr std::array<std::uint8_t, kOpCount> invert(const std::array<Op, N>& ops) {
    std::array<std::uint8_t, kOpCount> codes{};
    for (auto& c : codes) c = kNone;
    for (std::size_t i = 0; i < N; ++i)
        codes[static_cast<std::size_t>(ops[i])] = static_cast<std::uint8_t>(i);
    return codes;
}
constexpr auto kLegacyCodes = invert(kLegacyOps);
constexpr auto kModernCodes = invert(kModernOps);

constexpr std::array<std::string_view, kOpCount> kNames = {
    "VALIDATE",   "SET",        "COMPARE_SET", "GET",       "ADD",       "CHECK",     "WAIT",
    "GETNUMKEYS", "WATCH_KEY",  "DELETE_KEY",  "APPEND",    "MULTI_GET", "MULTI_SET", "CANCEL_WAIT",
    "PING",       "QUEUE_PUSH", "QUEUE_POP",   "QUEUE_LEN", "LIST_KEYS", "BARRIER",
};

void put_keys(std::string& out, const std::vector<std::string>& keys) {
    put_u64(out, keys.size());
    for (const auto& k : keys) put_bytes(out, k);
}

const std::string& first(const std::vector<std::string>& v, std::string_view what, Op op) {
    if (v.empty())
        throw StoreError(std::string(op_name(op)) + " request needs a " + std::string(what));
    return v.front();
}

}  // namespace

std::string_view op_name(Op op) noexcept { return kNames[static_cast<std::size_t>(op)]; }

std::optional<Op> decode_op(Dialect dialect, std::uint8_t code) noexcept {
    if (dialect == Dialect::Legacy) {
        if (code < kLegacyOps.size()) return kLegacyOps[code];
    } else if (code < kModernOps.size()) {
        return kModernOps[code];
    }
    return std::nullopt;
}

std::optional<std::uint8_t> encode_op(Dialect dialect, Op op) noexcept {
    const auto& codes = dialect == Dialect::Legacy ? kLegacyCodes : kModernCodes;
    const std::uint8_t code = codes[static_cast<std::size_t>(op)];
    if (code == kNone) return std::nullopt;
    return code;
}

std::string encode_request(Dialect dialect, const Request& r) {
    const auto code = encode_op(dialect, r.op);
    if (!code) {
        throw StoreError(std::string(op_name(r.op)) + " does not exist in the " +
                         (dialect == Dialect::Legacy ? "legacy" : "modern") + " dialect");
    }
    std::string out;
    put_u8(out, *code);
    switch (r.op) {
        case Op::Validate:
        case Op::Ping:
            put_u32(out, r.word);
            break;
        case Op::Set:
        case Op::Append:
        case Op::QueuePush:
            put_bytes(out, first(r.keys, "key", r.op));
            put_bytes(out, first(r.values, "value", r.op));
            break;
        case Op::CompareSet:
            if (r.values.size() != 2) throw StoreError("COMPARE_SET request needs 2 values");
            put_bytes(out, first(r.keys, "key", r.op));
            put_bytes(out, r.values[0]);
            put_bytes(out, r.values[1]);
            break;
        case Op::Get:
        case Op::WatchKey:
        case Op::DeleteKey:
        case Op::QueuePop:
        case Op::QueueLen:
            put_bytes(out, first(r.keys, "key", r.op));
            break;
        case Op::Add:
        case Op::Barrier:
            put_bytes(out, first(r.keys, "key", r.op));
            put_i64(out, r.number);
            break;
        case Op::Check:
        case Op::Wait:
        case Op::MultiGet:
            put_keys(out, r.keys);
            break;
        case Op::MultiSet:
            if (r.keys.size() != r.values.size()) {
                throw StoreError("MULTI_SET with " + std::to_string(r.keys.size()) + " keys but " +
                                 std::to_string(r.values.size()) + " values");
            }
            put_u64(out, r.keys.size());
            for (std::size_t i = 0; i < r.keys.size(); ++i) {
                put_bytes(out, r.keys[i]);
                put_bytes(out, r.values[i]);
            }
            break;
        case Op::NumKeys:
        case Op::CancelWait:
        case Op::ListKeys:
            break;
    }
    return out;
}

}  // namespace ptrun::rdzv::detail
