#pragma once
/// Byte-level request parsing: pure functions over a byte buffer, usable by a fuzzer.

#include <cstddef>
#include <string>
#include <string_view>

#include "protocol.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::rdzv::detail {

struct ParseResult {
    enum class Status { Complete, NeedMore, Invalid };
    Status status = Status::NeedMore;
    /// Complete: bytes the request occupies. NeedMore: the buffer size (from the same start)
    /// below which parsing cannot progress; always > bytes.size(). Invalid: 0.
    std::size_t size = 0;
    Request request;    ///< Complete only
    std::string error;  ///< Invalid only: why, for the log line
};

/// Parses the request at the front of `bytes` as `dialect`. Never blocks or throws (except
/// bad_alloc); every length and count is checked against `limits` before anything is
/// allocated, and the request is only materialised once all of it is present.
ParseResult parse_request(std::string_view bytes, Dialect dialect, const TcpStoreLimits& limits);

enum class Detection { NeedMore, Legacy, Modern, Reject };

/// Spec §3.3 on a connection's first bytes: 00 CE F7 85 3C = Modern (the 5 bytes are a
/// VALIDATE), 0xCE first = Reject (per-request-magic variant), anything else = Legacy.
Detection detect_dialect(std::string_view first_bytes) noexcept;

}  // namespace ptrun::rdzv::detail
