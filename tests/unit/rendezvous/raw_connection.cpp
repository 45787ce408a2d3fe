#include "raw_connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>

#include "protocol.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv::test {

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int v : values) out.push_back(static_cast<char>(static_cast<unsigned char>(v)));
    return out;
}
std::string u64(std::uint64_t v) {
    std::string s;
    detail::put_u64(s, v);
    return s;
}
std::string i64(std::int64_t v) {
    std::string s;
    detail::put_i64(s, v);
    return s;
}
std::string u32(std::uint32_t v) {
    std::string s;
    detail::put_u32(s, v);
    return s;
}
std::string field(std::string_view s) { return u64(s.size()) + std::string(s); }
std::string validate() { return bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C}); }

RawConnection::RawConnection(std::uint16_t port)
    : fd_(detail::connect_tcp("127.0.0.1", port, detail::Clock::now() + 10s)) {}

void RawConnection::send(std::string_view data) {
    detail::send_all(fd_, data, detail::Clock::now() + 10s);
}

void RawConnection::send_bytewise(std::string_view data) {
    for (char c : data) send(std::string_view(&c, 1));
}

std::optional<std::string> RawConnection::read(std::size_t n, std::chrono::milliseconds timeout) {
    std::string out(n, '\0');
    if (!detail::recv_exact(fd_, out.data(), n, detail::Clock::now() + timeout))
        return std::nullopt;
    return out;
}

bool RawConnection::closed_by_server(std::chrono::milliseconds timeout) {
    const auto deadline = detail::Clock::now() + timeout;
    char sink[65536];
    for (;;) {
        try {
            if (!detail::recv_exact(fd_, sink, 1, deadline)) return false;
            // Discard the rest of what is buffered without blocking.
            ssize_t n = 0;
            while ((n = ::recv(fd_.get(), sink, sizeof sink, MSG_DONTWAIT)) > 0) {
            }
            if (n == 0) return true;  // EOF
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
        } catch (const ConnectionLost&) {
            return true;
        }
    }
}

bool RawConnection::silent_for(std::chrono::milliseconds timeout) {
    pollfd p{fd_.get(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 0;
}

std::string RawConnection::local_address() const {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &length);
    char host[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &address.sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(address.sin_port));
}

}  // namespace ptrun::rdzv::test
