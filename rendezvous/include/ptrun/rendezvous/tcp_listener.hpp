#pragma once
/// A listening TCP socket on an IP literal, made with plain system calls: what TcpStoreServer
/// listens on, and what a launcher can hold (and hand to TcpStoreServerOptions::adopt_fd) before
/// any server exists.

#include <cstdint>
#include <string>

namespace ptrun::rdzv {

/// A TCP socket listening on `ip` (an IPv4 or IPv6 literal; "::" also takes IPv4 where the
/// host allows) and `port` (0: an ephemeral one): close-on-exec, non-blocking, SO_REUSEADDR,
/// a SOMAXCONN backlog. Returns its descriptor (the caller owns it), or -1 with `error` saying
/// why (an `ip` that is no literal included).
int listen_tcp(const std::string& ip, std::uint16_t port, std::string& error);

/// How a store server says it cannot listen: "store server: cannot listen on HOST:PORT: WHY".
std::string listen_failure(const std::string& host, std::uint16_t port, const std::string& why);

/// The port the socket `fd` is bound to; 0 when it cannot be read.
std::uint16_t bound_port(int fd);

}  // namespace ptrun::rdzv
