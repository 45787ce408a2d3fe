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

/// How far an incomplete request with a count of items (CHECK, WAIT, MULTI_GET, MULTI_SET) has
/// been checked: its first `items` items, which end at byte `end`. Lets the next parse of the
/// same bytes plus more go on from there instead of walking every item again.
struct ScanProgress {
    std::size_t items = 0;
    std::size_t end = 0;
};

/// Parses the request at the front of `bytes` as `dialect`. Never blocks or throws (except
/// bad_alloc); every length and count is checked against `limits` before anything is
/// allocated, and the request is only materialised once all of it is present. With `progress`
/// (zero for a new request, then kept between calls while the same request is NeedMore),
/// items already checked are not walked again: parsing a request that arrives in k pieces
/// costs O(its size), not O(k x its size).
ParseResult parse_request(std::string_view bytes, Dialect dialect, const TcpStoreLimits& limits,
                          ScanProgress* progress = nullptr);

enum class Detection { NeedMore, Legacy, Modern, Reject };

/// Spec §3.3 on a connection's first bytes: 00 CE F7 85 3C = Modern (the 5 bytes are a
/// VALIDATE), 0xCE first = Reject (per-request-magic variant), anything else = Legacy.
Detection detect_dialect(std::string_view first_bytes) noexcept;

}  // namespace ptrun::rdzv::detail
