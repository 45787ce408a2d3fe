#pragma once
/// Test helpers: a raw TCP connection to a store server and wire-byte builders.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "socket_io.hpp"

namespace ptrun::rdzv::test {

using namespace std::chrono_literals;

/// Bytes from hex-ish literals: bytes({0x05, 0x01}).
std::string bytes(std::initializer_list<int> values);
/// u64 little-endian.
std::string u64(std::uint64_t v);
std::string i64(std::int64_t v);
std::string u32(std::uint32_t v);
/// `string`/`bytes` field: u64 length + data.
std::string field(std::string_view s);
/// VALIDATE with the real magic: 00 CE F7 85 3C.
std::string validate();

/// A client socket that speaks raw bytes; every read has a bounded deadline.
class RawConnection {
  public:
    explicit RawConnection(std::uint16_t port);

    void send(std::string_view data);
    /// Sends one byte per send() call.
    void send_bytewise(std::string_view data);
    /// Exactly n bytes, or nullopt if they do not arrive within `timeout`; throws on EOF.
    std::optional<std::string> read(std::size_t n, std::chrono::milliseconds timeout = 10s);
    /// True once the server closed the connection (EOF or reset) within `timeout`, discarding
    /// whatever arrives before that.
    bool closed_by_server(std::chrono::milliseconds timeout = 10s);
    /// True if nothing is readable within `timeout` (a bounded negative check).
    bool silent_for(std::chrono::milliseconds timeout);
    /// "127.0.0.1:PORT" of this end, as the server's log lines name the peer.
    std::string local_address() const;
    int fd() const noexcept { return fd_.get(); }

  private:
    detail::Fd fd_;
};

}  // namespace ptrun::rdzv::test
