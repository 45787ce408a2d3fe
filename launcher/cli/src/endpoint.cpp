#include "ptrun/launcher/cli/endpoint.hpp"

#include <utility>
#include <algorithm>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

[[noreturn]] void bad(std::string_view flag, std::string_view text, std::string_view why) {
    throw UsageError("--" + std::string(flag) + " '" + std::string(text) +
                     "': " + std::string(why));
}

std::uint16_t port_of(std::string_view digits, std::string_view flag, std::string_view text) {
    auto v = env::parse_int(digits);
    if (!v || *v < 0 || *v > 65535)
        bad(flag, text, "expected HOST[:PORT] with PORT from 0 to 65535");
    return static_cast<std::uint16_t>(*v);
}

}  // namespace

EndpointText split_endpoint(std::string_view text, std::string_view flag) {
    if (text.empty()) bad(flag, text, "expected HOST[:PORT]");
    if (text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos || close == 1) bad(flag, text, "expected [IPv6]:PORT");
        EndpointText e{std::string(text.substr(1, close - 1)), std::nullopt};
        auto rest = text.substr(close + 1);
        if (rest.empty()) return e;
        if (rest.front() != ':') bad(flag, text, "expected [IPv6]:PORT");
        e.port = port_of(rest.substr(1), flag, text);
        return e;
    }
    if (std::count(text.begin(), text.end(), ':') >= 2) return {std::string(text), std::nullopt};
    auto colon = text.find(':');
    if (colon == 0) bad(flag, text, "expected HOST[:PORT] with a host before the colon");
    if (colon == std::string_view::npos) return {std::string(text), std::nullopt};
    return {std::string(text.substr(0, colon)), port_of(text.substr(colon + 1), flag, text)};
}

HostPort parse_endpoint(std::string_view text, std::uint16_t default_port, std::string_view flag) {
    auto e = split_endpoint(text, flag);
    return {std::move(e.host), e.port.value_or(default_port)};
}

std::string format_endpoint(const std::string& host, std::uint16_t port) {
    bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace ptrun::launcher
