#pragma once
/// Blocking-style socket I/O with deadlines (poll), for the client. No Asio.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ptrun/sys/fd.hpp"

namespace ptrun::rdzv::detail {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

using Fd = sys::Fd;

/// One connection attempt to each address of host:port, until one succeeds or `deadline`
/// passes; returns a non-blocking, TCP_NODELAY socket. Throws ConnectionLost with the reason.
Fd connect_tcp(const std::string& host, std::uint16_t port, Deadline deadline);

/// Sends all of `data`; blocks until done or `deadline`. Throws ConnectionLost on error or when
/// the deadline passes (the stream is then in an unknown state).
void send_all(const Fd& fd, std::string_view data, Deadline deadline);

/// Receives exactly `n` bytes into `out`; blocks until done or `deadline`. Returns false on
/// the deadline (some bytes may have been consumed if n > 1). Throws ConnectionLost on EOF or
/// error.
bool recv_exact(const Fd& fd, char* out, std::size_t n, Deadline deadline);

/// What ended wait_readable().
enum class Readable { Ready, Woken, Timeout };
/// Waits until `fd` has something to read (or an error), `wake_fd` (an eventfd, -1 for none)
/// was written to (then drained: Woken), or `deadline` passes. Throws ConnectionLost if poll
/// fails.
Readable wait_readable(const Fd& fd, int wake_fd, Deadline deadline);

}  // namespace ptrun::rdzv::detail
