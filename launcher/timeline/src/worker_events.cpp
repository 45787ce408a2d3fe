#include "ptrun/launcher/timeline/worker_events.hpp"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

namespace ptrun::launcher {

std::optional<WorkerEventMessage> parse_worker_event(std::string_view text) {
    constexpr std::string_view kHead = "ptrun-event 1 ";
    if (text.size() > kMaxEventMessage || !text.starts_with(kHead)) return std::nullopt;
    text.remove_prefix(kHead.size());
    if (text.ends_with('\n')) text.remove_suffix(1);
    auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    auto phase = phase_named(text.substr(0, space));
    if (!phase || (*phase != Phase::PythonUp && *phase != Phase::ProcessGroupStart &&
                   *phase != Phase::ProcessGroupReady && *phase != Phase::FirstProgress))
        return std::nullopt;
    std::string_view digits = text.substr(space + 1);
    std::uint64_t t = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
        return std::nullopt;
    return WorkerEventMessage{*phase, t};
}

EventSocket EventSocket::open() {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::system_error(errno, std::generic_category(), "the workers' events socket");
    int on = 1;
    unsigned char random[8] = {};
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
        int e = errno;
        ::close(fd);
        throw std::system_error(e, std::generic_category(),
                                "the workers' events socket (its random name)");
    }
    std::string name = "ptrun-events-" + std::to_string(::getpid()) + "-";
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char b : random) {
        name += kHex[b >> 4];
        name += kHex[b & 15];
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        int e = errno;
        ::close(fd);
        throw std::system_error(e, std::generic_category(), "the workers' events socket @" + name);
    }
    return EventSocket(fd, "@" + name);
}

EventSocket::~EventSocket() {
    if (fd_ >= 0) ::close(fd_);
}

EventSocket::EventSocket(EventSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), address_(std::move(other.address_)) {}

EventSocket& EventSocket::operator=(EventSocket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        address_ = std::move(other.address_);
    }
    return *this;
}

std::optional<ReceivedEvent> EventSocket::receive() noexcept {
    char buf[kMaxEventMessage + 1];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do n = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return std::nullopt;
    ReceivedEvent event;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
            ucred cred;
            std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
            event.pid = cred.pid;
        }
    }
    if ((msg.msg_flags & MSG_TRUNC) == 0 && static_cast<std::size_t>(n) <= kMaxEventMessage)
        event.text.assign(buf, static_cast<std::size_t>(n));
    return event;
}

}  // namespace ptrun::launcher
