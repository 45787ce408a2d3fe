#pragma once
/// Which local address reaches a host: the one answer for the launcher's rendezvous and ddp's
/// inter-node links (header-only, ptrun::sys).

#include <netdb.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "ptrun/sys/fd.hpp"

namespace ptrun::sys {

/// The numeric address of the local interface the kernel would send from to reach host:port
/// (a UDP connect per resolved address; nothing is sent). Empty when `host` does not resolve
/// or no address of it is routable; `why`, when given, then says which.
inline std::string route_source_address(const std::string& host, std::uint16_t port,
                                        std::string* why = nullptr) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* list = nullptr;
    const std::string service = std::to_string(port);
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &list) != 0 || list == nullptr) {
        if (why != nullptr) *why = "cannot resolve '" + host + "'";
        return {};
    }
    std::string out;
    for (const addrinfo* a = list; a != nullptr && out.empty(); a = a->ai_next) {
        Fd fd(::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        if (!fd || ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) continue;
        sockaddr_storage local{};
        socklen_t len = sizeof local;
        if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
        char text[NI_MAXHOST] = {};
        if (::getnameinfo(reinterpret_cast<const sockaddr*>(&local), len, text, sizeof text,
                          nullptr, 0, NI_NUMERICHOST) == 0) {
            out = text;
        }
    }
    ::freeaddrinfo(list);
    if (out.empty() && why != nullptr) *why = "no local route to '" + host + "'";
    return out;
}

}  // namespace ptrun::sys
