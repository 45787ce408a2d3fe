#pragma once
/// This host's own address when there is no peer to route toward (the file rendezvous):
/// header-only, ptrun::sys.

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>

#include <string>

namespace ptrun::sys {

/// The numeric address of the first interface that is up and not loopback, IPv4 before IPv6
/// (link-local IPv6 left out); empty when there is none.
inline std::string first_interface_address() {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return {};
    std::string v4, v6;
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_UP) == 0 ||
            (a->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        const int family = a->ifa_addr->sa_family;
        if (family != AF_INET && family != AF_INET6) continue;
        char text[NI_MAXHOST] = {};
        const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        if (::getnameinfo(a->ifa_addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0)
            continue;
        const std::string address = text;
        if (family == AF_INET && v4.empty()) v4 = address;
        if (family == AF_INET6 && v6.empty() && address.rfind("fe80", 0) != 0) v6 = address;
    }
    ::freeifaddrs(list);
    return !v4.empty() ? v4 : v6;
}

}  // namespace ptrun::sys
