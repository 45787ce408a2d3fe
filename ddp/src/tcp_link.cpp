#include "tcp_link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "ptrun/ddp/errors.hpp"
#include "ptrun/sys/route.hpp"

namespace ptrun::ddp::detail {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
    throw CollectiveError("inter-node link: " + what + ": " + std::strerror(err));
}

int remaining_ms(const CallTimer& timer) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        timer.deadline - std::chrono::steady_clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

void tune(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int buf = 4 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/// Moves exactly `len` bytes in direction `out` on a non-blocking socket before the deadline.
void transfer(int fd, char* buf, std::size_t len, bool out, const CallTimer& timer) {
    std::size_t done = 0;
    while (done < len) {
        const ssize_t n = out ? ::send(fd, buf + done, len - done, MSG_NOSIGNAL)
                              : ::recv(fd, buf + done, len - done, 0);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0) throw CollectiveError("inter-node link: peer closed during handshake");
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) fail("handshake", errno);
        pollfd p{fd, static_cast<short>(out ? POLLOUT : POLLIN), 0};
        if (::poll(&p, 1, remaining_ms(timer)) == 0) {
            throw CollectiveTimeout(timer.collective, {}, timer.timeout);
        }
    }
}

}  // namespace

Listener listen_any() {
    Listener l;
    int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int zero = 0;
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) fail("socket", errno);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            const int err = errno;
            ::close(fd);
            fail("bind", err);
        }
    }
    l.fd = Fd(fd);
    if (::listen(fd, 16) != 0) fail("listen", errno);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    l.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return l;
}

std::string local_address_towards(const std::string& host, int port) {
    std::string why;
    std::string out = sys::route_source_address(host, static_cast<std::uint16_t>(port), &why);
    if (out.empty()) throw CollectiveError("inter-node link: " + why);
    return out;
}

Fd connect_link(const std::string& host, std::uint16_t port, std::int32_t hello,
                const CallTimer& timer) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) {
        throw CollectiveError("inter-node link: bad address '" + host + "'");
    }
    Fd fd;
    int last_err = 0;
    while (fd.get() < 0) {
        Fd s(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (s.get() >= 0 && ::connect(s.get(), res->ai_addr, res->ai_addrlen) == 0) {
            fd = std::move(s);
            break;
        }
        last_err = errno;
        if (remaining_ms(timer) == 0) {
            ::freeaddrinfo(res);
            throw CollectiveError("inter-node link: connect to " + host + " port " + service +
                                  " failed until the deadline: " + std::strerror(last_err));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded retry, refused only
    }
    ::freeaddrinfo(res);
    tune(fd.get());
    transfer(fd.get(), reinterpret_cast<char*>(&hello), sizeof hello, true, timer);
    return fd;
}

Fd accept_link(const Listener& listener, std::int32_t expected_hello, const CallTimer& timer) {
    for (;;) {
        pollfd p{listener.fd.get(), POLLIN, 0};
        if (::poll(&p, 1, remaining_ms(timer)) == 0) {
            throw CollectiveTimeout(timer.collective, {}, timer.timeout);
        }
        Fd fd(::accept4(listener.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (fd.get() < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            fail("accept", errno);
        }
        tune(fd.get());
        std::int32_t hello = -1;
        transfer(fd.get(), reinterpret_cast<char*>(&hello), sizeof hello, false, timer);
        if (hello == expected_hello) return fd;
    }
}

}  // namespace ptrun::ddp::detail
