#pragma once
/// Socket helpers for the inter-node links: listen, find the address peers can reach, connect
/// and accept with deadlines. IPv4 and IPv6; every failure throws CollectiveError.

#include <cstdint>
#include <string>

#include "call_timer.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::ddp::detail {

using Fd = sys::Fd;

/// A listening socket on every address (dual-stack where IPv6 exists) and an ephemeral port.
struct Listener {
    Fd fd;
    std::uint16_t port = 0;
};

/// Opens a Listener. Throws CollectiveError.
Listener listen_any();

/// The local address this host uses to reach host:port (a UDP connect; nothing is sent).
std::string local_address_towards(const std::string& host, int port);

/// Connects to host:port (retrying refused connections until the deadline), sends
/// `hello` (4 bytes) and returns the socket, non-blocking with TCP_NODELAY.
Fd connect_link(const std::string& host, std::uint16_t port, std::int32_t hello,
                const CallTimer& timer);

/// Accepts one connection whose 4-byte hello equals `expected_hello`; same socket options.
Fd accept_link(const Listener& listener, std::int32_t expected_hello, const CallTimer& timer);

}  // namespace ptrun::ddp::detail
