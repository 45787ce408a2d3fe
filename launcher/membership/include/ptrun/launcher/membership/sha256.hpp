#pragma once
/// SHA-256 (FIPS 180-4), ptrun's own: the rendezvous's HMAC needs one hash of a few hundred
/// bytes per sealed value, which plain C++ does in microseconds, with no library's CPU probe at
/// every start (launcher/README.md, "Crypto").

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptrun::launcher {

using Sha256Digest = std::array<std::uint8_t, 32>;

/// An incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
  public:
    Sha256();
    /// Adds `data` to the message.
    void update(std::string_view data);
    /// The hash of everything added; the object is spent afterwards.
    Sha256Digest digest();

  private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> block_{};
    std::size_t used_ = 0;      ///< bytes of block_ filled
    std::uint64_t length_ = 0;  ///< message bytes so far
};

/// SHA-256 of `data`.
Sha256Digest sha256(std::string_view data);

}  // namespace ptrun::launcher
