/// libFuzzer target for the server's untrusted-input path: parse_request on one buffer, the
/// same bytes through RequestStream split at fuzzer-chosen points (must agree with one-shot
/// feeding), every parsed request re-encoded (must give back its bytes), and the requests
/// applied to a StoreState (must never crash, only reject with ProtocolError).
///
/// Input layout: byte 0 = dialect (bit 0) and the connection a request comes from (bits 1-2);
/// byte 1 = chunk-size seed; the rest = wire bytes.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "protocol.hpp"
#include "request_parser.hpp"
#include "request_stream.hpp"
#include "store_state.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::detail;

namespace {

TcpStoreLimits fuzz_limits() {
    TcpStoreLimits l;
    l.max_key_bytes = 64;
    l.max_value_bytes = 512;
    l.max_keys_per_request = 16;
    l.max_request_bytes = 8192;
    return l;
}

void require(bool ok) {
    if (!ok) std::abort();
}

/// Requests from feeding `wire` in chunks of sizes cycling through `sizes`; `error` set on reject.
std::vector<Request> stream_requests(std::string_view wire, const std::vector<std::size_t>& sizes,
                                     const TcpStoreLimits& limits, bool& error) {
    RequestStream stream(limits);
    std::vector<Request> out;
    std::size_t pos = 0;
    std::size_t i = 0;
    error = false;
    try {
        while (pos < wire.size()) {
            const std::size_t n = std::min(sizes[i++ % sizes.size()], wire.size() - pos);
            stream.feed(wire.substr(pos, n));
            pos += n;
            while (auto r = stream.next()) out.push_back(std::move(*r));
        }
    } catch (const ProtocolError&) {
        error = true;
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    static const TcpStoreLimits limits = fuzz_limits();
    const Dialect dialect = (data[0] & 1) != 0 ? Dialect::Modern : Dialect::Legacy;
    const ConnId from = 1 + ((data[0] >> 1) & 3);
    const std::string_view wire(reinterpret_cast<const char*>(data) + 2, size - 2);

    // 1. One-shot parse: consistent sizes, canonical re-encoding.
    const ParseResult one = parse_request(wire, dialect, limits);
    switch (one.status) {
        case ParseResult::Status::Complete:
            require(one.size > 0 && one.size <= wire.size());
            require(encode_request(dialect, one.request) == wire.substr(0, one.size));
            break;
        case ParseResult::Status::NeedMore:
            require(one.size > wire.size() && one.size <= limits.max_request_bytes);
            break;
        case ParseResult::Status::Invalid:
            require(!one.error.empty());
            break;
    }

    // 2. Segmentation must not matter.
    std::vector<std::size_t> sizes;
    for (std::size_t s = 1 + (data[1] & 7); sizes.size() < 8; s = (s * 5 + data[1]) % 13 + 1) {
        sizes.push_back(s);
    }
    bool whole_error = false;
    bool split_error = false;
    const auto whole = stream_requests(wire, {wire.size() + 1}, limits, whole_error);
    const auto split = stream_requests(wire, sizes, limits, split_error);
    require(whole_error == split_error);
    require(whole == split);

    // 3. The store semantics accept whatever the parser lets through.
    StoreState state;
    std::vector<Outgoing> out;
    for (const auto& r : whole) {
        out.clear();
        try {
            state.handle(from, Request(r), out);
        } catch (const ProtocolError&) {
            break;  // the server would close this connection
        }
    }
    state.disconnect(from);
    return 0;
}
