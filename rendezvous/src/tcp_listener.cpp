#include "ptrun/rendezvous/tcp_listener.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptrun::rdzv {

int listen_tcp(const std::string& ip, std::uint16_t port, std::string& error) {
    sockaddr_storage address{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof *v4;
    } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
    } else {  // e.g. a scoped IPv6 address, fe80::1%eth0
        addrinfo hints{};
        hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        if (::getaddrinfo(ip.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
            error = "'" + ip + "' is not an IP address";
            return -1;
        }
        std::memcpy(&address, found->ai_addr, found->ai_addrlen);
        length = found->ai_addrlen;
        ::freeaddrinfo(found);
        if (address.ss_family == AF_INET6) v6->sin6_port = htons(port);
        if (address.ss_family == AF_INET) v4->sin_port = htons(port);
    }
    const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        error = std::strerror(errno);
        return -1;
    }
    const int on = 1, off = 0;
    bool ok = ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0;
    if (ok && address.ss_family == AF_INET6) {  // "::" is dual-stack
        ok = ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) == 0;
    }
    ok = ok && ::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0 &&
         ::listen(fd, SOMAXCONN) == 0;
    if (!ok) {
        error = std::strerror(errno);
        ::close(fd);
        return -1;
    }
    return fd;
}

std::string listen_failure(const std::string& host, std::uint16_t port, const std::string& why) {
    return "store server: cannot listen on " + host + ":" + std::to_string(port) + ": " + why;
}

std::uint16_t bound_port(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
    if (address.ss_family == AF_INET) {
        return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
    }
    if (address.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
    }
    return 0;
}

}  // namespace ptrun::rdzv
