#pragma once
/// A port the kernel considers free right now (torchrun's standalone approach).

#include <cstdint>
#include <string>

namespace ptrun::launcher {

/// Binds port 0 on `host` (an IPv4 literal), reads the port and releases it. Throws on failure.
std::uint16_t pick_free_port(const std::string& host);

}  // namespace ptrun::launcher
