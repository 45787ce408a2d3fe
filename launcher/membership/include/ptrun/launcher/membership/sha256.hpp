#pragma once
/// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), checked against the FIPS and RFC 4231 test
/// vectors (sha256_test.cpp). Small and dependency-free so that the static ptrun binary needs no
/// libcrypto for authenticating its rendezvous values.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ptrun::launcher {

using Sha256Digest = std::array<std::uint8_t, 32>;

/// Incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
  public:
    Sha256();
    /// Absorbs `data`.
    void update(std::string_view data);
    /// The digest of everything absorbed; the object must not be updated afterwards.
    Sha256Digest digest();

  private:
    void block(const std::uint8_t* p);

    std::array<std::uint32_t, 8> h_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t length_ = 0;  ///< bytes absorbed
};

/// SHA-256 of `data`.
Sha256Digest sha256(std::string_view data);

/// HMAC-SHA-256 of `message` under `key` (any length; longer than 64 bytes is hashed first).
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

/// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256Digest& digest);

/// Compares two strings in time that depends only on their lengths (for MACs).
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace ptrun::launcher
