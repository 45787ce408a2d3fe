#pragma once
/// The two TCPStore wire dialects (spec §3).

#include <cstdint>

namespace ptrun::rdzv {

/// Legacy: PyTorch 1.13/2.0 numbering (L1), no handshake. Modern: 2.2+ numbering, VALIDATE
/// (+ PING) first. A TcpStoreServer serves both on one port, detected per connection.
enum class Dialect : std::uint8_t { Legacy, Modern };

}  // namespace ptrun::rdzv
