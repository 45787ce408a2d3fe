#include "ptrun/launcher/membership/store_listen.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>

namespace ptrun::launcher {
namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

/// True when `name` is `hostname` or its first label (node1 vs node1.cluster.example).
bool same_host_name(const std::string& name, const std::string& hostname) {
    if (hostname.empty()) return false;
    const std::string a = lower(name), b = lower(hostname);
    return a == b || a == b.substr(0, b.find('.')) || a.substr(0, a.find('.')) == b;
}

bool is_loopback(const sockaddr* sa) {
    if (sa->sa_family == AF_INET) {
        auto addr = ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
        return (addr >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const auto& a6 = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    return false;
}

bool can_bind(const sockaddr* sa, socklen_t len) {
    int fd = ::socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    bool ok = ::bind(fd, sa, len) == 0;
    ::close(fd);
    return ok;
}

}  // namespace

ListenChoice choose_listen_address(const std::string& endpoint_host, bool numeric,
                                   const std::vector<ResolvedAddress>& resolved,
                                   const std::string& own_hostname) {
    const ResolvedAddress* first_local = nullptr;
    const ResolvedAddress* first_remote_reachable = nullptr;  // local and not loopback
    for (const auto& a : resolved) {
        if (!a.local) continue;
        if (!first_local) first_local = &a;
        if (!a.loopback && !first_remote_reachable) first_remote_reachable = &a;
    }
    if (!first_local) {
        return {"", "'" + endpoint_host + "' is not an address of this machine (is_host=true)"};
    }
    if (numeric) return {first_local->text, {}};
    if (first_remote_reachable) return {first_remote_reachable->text, {}};
    if (same_host_name(endpoint_host, own_hostname)) {
        return {"", "'" + endpoint_host + "' resolves here only to " + first_local->text +
                        ", which other nodes cannot reach (give the endpoint as an address to "
                        "listen on that address only)"};
    }
    return {first_local->text, {}};
}

std::vector<ResolvedAddress> resolve_for_listen(const std::string& host, bool& numeric) {
    std::vector<ResolvedAddress> out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* list = nullptr;
    numeric = ::getaddrinfo(host.c_str(), nullptr, &hints, &list) == 0;
    if (!numeric) {
        hints.ai_flags = 0;
        if (::getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
    }
    for (auto* a = list; a; a = a->ai_next) {
        char text[NI_MAXHOST];
        if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0,
                          NI_NUMERICHOST) != 0) {
            continue;
        }
        ResolvedAddress r{text, can_bind(a->ai_addr, a->ai_addrlen), is_loopback(a->ai_addr)};
        // IPv4 first: a name with both families is then reached by every client that tries both.
        if (a->ai_family == AF_INET) {
            auto it = std::find_if(out.begin(), out.end(), [](const ResolvedAddress& x) {
                return x.text.find(':') != std::string::npos;
            });
            out.insert(it, r);
        } else {
            out.push_back(r);
        }
    }
    ::freeaddrinfo(list);
    return out;
}

int listen_on(const std::string& address, std::uint16_t port, bool v6) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    int family = v6 ? AF_INET6 : AF_INET;
    if (!address.empty()) {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
        addrinfo* list = nullptr;
        const std::string service = std::to_string(port);
        if (int rc = ::getaddrinfo(address.c_str(), service.c_str(), &hints, &list); rc != 0) {
            errno = EINVAL;
            return -1;
        }
        std::copy_n(reinterpret_cast<const char*>(list->ai_addr), list->ai_addrlen,
                    reinterpret_cast<char*>(&ss));
        len = list->ai_addrlen;
        family = list->ai_family;
        ::freeaddrinfo(list);
    } else if (v6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons(port);
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = htons(port);
        len = sizeof *a;
    }
    int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6 && address.empty()) {
        int zero = 0;
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 4096) != 0) {
        int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

}  // namespace ptrun::launcher
