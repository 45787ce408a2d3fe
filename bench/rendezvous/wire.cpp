#include "wire.hpp"

#include <cstring>

namespace ptrun::bench {
namespace {

// Modern query codes (rendezvous/src/protocol.cpp kModernOps).
enum Code : std::uint8_t {
    kValidate = 0,
    kSet = 1,
    kGet = 3,
    kAdd = 4,
    kCheck = 5,
    kWait = 6,
    kCancelWait = 12,
    kPing = 13,
    kQueuePush = 14
};
constexpr std::uint32_t kMagic = 0x3C85F7CEu;

template <typename T>
void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
}
void put_bytes(std::string& out, std::string_view s) {
    put<std::uint64_t>(out, s.size());
    out.append(s);
}
std::string op(Code c) { return std::string(1, static_cast<char>(c)); }

}  // namespace

std::string handshake(std::uint32_t nonce) {
    std::string out = op(kValidate);
    put(out, kMagic);
    out += op(kPing);
    put(out, nonce);
    return out;
}

std::string add(std::string_view key, std::int64_t delta) {
    std::string out = op(kAdd);
    put_bytes(out, key);
    put(out, delta);
    return out;
}

std::string set(std::string_view key, std::string_view value) {
    std::string out = op(kSet);
    put_bytes(out, key);
    put_bytes(out, value);
    return out;
}

std::string get(std::string_view key) {
    std::string out = op(kGet);
    put_bytes(out, key);
    return out;
}

std::string wait(const std::vector<std::string>& keys) {
    std::string out = op(kWait);
    put<std::uint64_t>(out, keys.size());
    for (const auto& k : keys) put_bytes(out, k);
    return out;
}

std::string queue_push(std::string_view key, std::string_view value) {
    std::string out = op(kQueuePush);
    put_bytes(out, key);
    put_bytes(out, value);
    return out;
}

std::string check(const std::vector<std::string>& keys) {
    std::string out = op(kCheck);
    put<std::uint64_t>(out, keys.size());
    for (const auto& k : keys) put_bytes(out, k);
    return out;
}

std::string cancel_wait() { return op(kCancelWait); }

std::size_t reply_length(Reply kind, std::string_view in) {
    switch (kind) {
        case Reply::None:
            return 0;
        case Reply::U8:
        case Reply::Wait:
        case Reply::Cancel:
            return in.size() >= 1 ? 1 : 0;
        case Reply::U32:
            return in.size() >= 4 ? 4 : 0;
        case Reply::I64:
            return in.size() >= 8 ? 8 : 0;
        case Reply::Bytes: {
            if (in.size() < 8) return 0;
            std::uint64_t n = 0;
            std::memcpy(&n, in.data(), 8);
            return in.size() >= 8 + n ? static_cast<std::size_t>(8 + n) : 0;
        }
    }
    return 0;
}

std::string_view reply_payload(Reply kind, std::string_view in) {
    if (kind == Reply::Bytes) return in.substr(8, reply_length(kind, in) - 8);
    return in.substr(0, reply_length(kind, in));
}

}  // namespace ptrun::bench
