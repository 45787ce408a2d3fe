#pragma once
/// `HOST[:PORT]` endpoints as torchrun writes them, IPv6 in brackets (`[fd00::1]:29400`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptrun::launcher {

struct HostPort {
    std::string host;  ///< without brackets
    std::uint16_t port = 0;
    bool operator==(const HostPort&) const = default;
};

/// `HOST[:PORT]` as written: the port only when the text has one (0 included).
struct EndpointText {
    std::string host;  ///< without brackets
    std::optional<std::uint16_t> port;
};

/// Parses `text` (the one endpoint grammar: every HOST[:PORT] option uses it). A bare IPv6
/// address (two or more colons, no brackets) is a host without a port. Throws UsageError naming
/// `flag` and the text.
EndpointText split_endpoint(std::string_view text, std::string_view flag);

/// Parses `text`; a missing port gives `default_port`. A bare IPv6 address (two or more colons,
/// no brackets) is a host without a port. Throws UsageError naming `flag` and the text.
HostPort parse_endpoint(std::string_view text, std::uint16_t default_port, std::string_view flag);

/// `host:port`, with brackets around an IPv6 host.
std::string format_endpoint(const std::string& host, std::uint16_t port);

}  // namespace ptrun::launcher
