#include "ptrun/launcher/membership/hmac_sha256.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::size_t kBlock = 64;

std::string_view view(const Sha256Digest& d) {
    return {reinterpret_cast<const char*>(d.data()), d.size()};
}

}  // namespace

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
    // RFC 2104: H((K ^ opad) || H((K ^ ipad) || message)), a key longer than a block hashed first.
    std::array<char, kBlock> padded{};
    Sha256Digest hashed_key;
    if (key.size() > kBlock) {
        hashed_key = sha256(key);
        key = view(hashed_key);
    }
    for (std::size_t i = 0; i < key.size(); ++i) padded[i] = key[i];
    std::array<char, kBlock> pad;
    for (std::size_t i = 0; i < kBlock; ++i) pad[i] = static_cast<char>(padded[i] ^ 0x36);
    Sha256 inner;
    inner.update({pad.data(), pad.size()});
    inner.update(message);
    const Sha256Digest inner_digest = inner.digest();
    for (std::size_t i = 0; i < kBlock; ++i) pad[i] = static_cast<char>(padded[i] ^ 0x5c);
    Sha256 outer;
    outer.update({pad.data(), pad.size()});
    outer.update(view(inner_digest));
    return outer.digest();
}

std::string to_hex(const Sha256Digest& digest) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(digest.size() * 2);
    for (auto b : digest) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    // Every byte is compared whatever the earlier ones were; the volatile keeps the compiler
    // from ending the loop at the first difference.
    volatile unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = static_cast<unsigned char>(
            diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
    }
    return diff == 0;
}

}  // namespace ptrun::launcher
