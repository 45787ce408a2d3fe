#pragma once
/// HMAC-SHA-256 (RFC 2104) for the rendezvous's authenticated values, over ptrun's own SHA-256
/// (sha256.hpp; launcher/README.md, "Crypto").

#include <string>
#include <string_view>

#include "ptrun/launcher/membership/sha256.hpp"

namespace ptrun::launcher {

/// HMAC-SHA-256 of `message` under `key` (any length; longer than 64 bytes is hashed first).
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

/// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256Digest& digest);

/// Compares two strings in time that depends only on their lengths, for MACs; strings of
/// different lengths are unequal.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace ptrun::launcher
