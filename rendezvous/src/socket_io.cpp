#include "socket_io.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv::detail {
namespace {

/// poll() timeout in ms until `deadline`, rounded up; 0 if it has passed.
int poll_ms(Deadline deadline) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

/// Waits for `events` on fd; false on the deadline. Throws ConnectionLost on poll failure.
bool wait_for(int fd, short events, Deadline deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, poll_ms(deadline));
        if (r > 0) return true;
        if (r == 0) return false;
        if (errno != EINTR) throw ConnectionLost(std::string("poll: ") + std::strerror(errno));
    }
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

Fd connect_tcp(const std::string& host, std::uint16_t port, Deadline deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
        throw ConnectionLost("cannot resolve '" + host + "': " + ::gai_strerror(rc));
    }
    std::string error = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        Fd fd(
            ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
        if (!fd) {
            error = errno_text("socket");
            continue;
        }
        if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
            if (errno != EINPROGRESS) {
                error = errno_text("connect");
                continue;
            }
            if (!wait_for(fd.get(), POLLOUT, deadline)) {
                error = "connect timed out";
                continue;
            }
            int so_error = 0;
            socklen_t len = sizeof so_error;
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
            if (so_error != 0) {
                error = std::string("connect: ") + std::strerror(so_error);
                continue;
            }
        }
        const int one = 1;
        ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(found);
        return fd;
    }
    ::freeaddrinfo(found);
    throw ConnectionLost(error);
}

void send_all(const Fd& fd, std::string_view data, Deadline deadline) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd.get(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd.get(), POLLOUT, deadline)) throw ConnectionLost("send timed out");
        } else if (errno != EINTR) {
            throw ConnectionLost(errno_text("send"));
        }
    }
}

bool recv_exact(const Fd& fd, char* out, std::size_t n, Deadline deadline) {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::recv(fd.get(), out + got, n - got, 0);
        if (r > 0) {
            got += static_cast<std::size_t>(r);
        } else if (r == 0) {
            throw ConnectionLost("the store server closed the connection");
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd.get(), POLLIN, deadline)) return false;
        } else if (errno != EINTR) {
            throw ConnectionLost(errno_text("recv"));
        }
    }
    return true;
}

Readable wait_readable(const Fd& fd, int wake_fd, Deadline deadline) {
    for (;;) {
        pollfd p[2] = {{fd.get(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
        const int r = ::poll(p, wake_fd < 0 ? 1 : 2, poll_ms(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw ConnectionLost(errno_text("poll"));
        if (r == 0) return Readable::Timeout;
        if (p[0].revents != 0) return Readable::Ready;
        eventfd_t count = 0;
        ::eventfd_read(wake_fd, &count);  // non-blocking: a racing drain leaves EAGAIN
        return Readable::Woken;
    }
}

}  // namespace ptrun::rdzv::detail
