#pragma once
/// HMAC-SHA-256 (RFC 2104) for the rendezvous's authenticated values, from Debian's nettle,
/// linked statically so that ptrun still loads only glibc (launcher/README.md, "Crypto").

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ptrun::launcher {

using Sha256Digest = std::array<std::uint8_t, 32>;

/// HMAC-SHA-256 of `message` under `key` (any length; longer than 64 bytes is hashed first).
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

/// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256Digest& digest);

/// Compares two strings in time that depends only on their lengths (nettle's memeql_sec), for
/// MACs; strings of different lengths are unequal.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace ptrun::launcher
