#include "ptrun/launcher/membership/hmac_sha256.hpp"

#include <nettle/hmac.h>
#include <nettle/memops.h>

namespace ptrun::launcher {
namespace {

const std::uint8_t* bytes(std::string_view s) {
    return reinterpret_cast<const std::uint8_t*>(s.data());
}

}  // namespace

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
    hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, key.size(), bytes(key));
    hmac_sha256_update(&ctx, message.size(), bytes(message));
    Sha256Digest digest{};
    hmac_sha256_digest(&ctx, digest.size(), digest.data());
    return digest;
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
    return a.size() == b.size() && nettle_memeql_sec(a.data(), b.data(), a.size()) != 0;
}

}  // namespace ptrun::launcher
