#include "ptrun/watchdog/status_client.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ptrun/sys/fd.hpp"

namespace ptrun::watchdog {
namespace {

using Clock = std::chrono::steady_clock;

/// The largest answer read: a /status of 100,000 ranks is about 21 MB (some 210 bytes a rank).
constexpr std::size_t kMaxAnswer = std::size_t{64} << 20;

/// Milliseconds left before `deadline` (0 when past).
int left_ms(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

/// Waits for `events` on `fd` until `deadline`; false when the time ran out.
bool wait_for(int fd, short events, Clock::time_point deadline) {
    pollfd p{fd, events, 0};
    while (true) {
        const int n = ::poll(&p, 1, left_ms(deadline));
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return true;  // the next call says what is wrong
    }
}

/// A connected socket to host:port, or -1 with `error` set.
sys::Fd connect_to(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                   std::string& error) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
        error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
        return sys::Fd();
    }
    sys::Fd out;
    for (addrinfo* a = found; a != nullptr && !out; a = a->ai_next) {
        sys::Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) continue;
        if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            error = std::strerror(errno);
            continue;
        }
        if (!wait_for(fd.get(), POLLOUT, deadline)) {
            error = "no answer to the connection within the deadline";
            continue;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr != 0) {
            error = std::strerror(soerr);
            continue;
        }
        out = std::move(fd);
    }
    ::freeaddrinfo(found);
    return out;
}

}  // namespace

FetchResult http_get(const std::string& host, std::uint16_t port, const std::string& path,
                     std::chrono::milliseconds within) {
    FetchResult r;
    const auto deadline = Clock::now() + within;
    auto fd = connect_to(host, port, deadline, r.error);
    if (!fd) return r;
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    std::size_t sent = 0;
    while (sent < request.size()) {
        if (!wait_for(fd.get(), POLLOUT, deadline)) {
            r.error = "could not send the request within the deadline";
            return r;
        }
        const ssize_t n =
            ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) {
            r.error = std::strerror(errno);
            return r;
        }
        sent += static_cast<std::size_t>(n);
    }
    std::string answer;
    char buf[16384];
    while (answer.size() <= kMaxAnswer) {
        if (!wait_for(fd.get(), POLLIN, deadline)) {
            r.error = "no whole answer within " + std::to_string(within.count() / 1000) + " s";
            return r;
        }
        const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) {
            r.error = std::strerror(errno);
            return r;
        }
        if (n == 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
    }
    if (answer.size() > kMaxAnswer) {
        r.error = "the answer is larger than " + std::to_string(kMaxAnswer >> 20) + " MiB";
        return r;
    }
    int status = 0;
    if (std::sscanf(answer.c_str(), "HTTP/1.%*d %d", &status) != 1 || status < 100) {
        r.error = "the answer is not HTTP";
        r.body = answer.substr(0, 200);
        return r;
    }
    const auto head_end = answer.find("\r\n\r\n");
    r.status = status;
    r.body = head_end == std::string::npos ? "" : answer.substr(head_end + 4, kMaxAnswer);
    return r;
}

}  // namespace ptrun::watchdog
