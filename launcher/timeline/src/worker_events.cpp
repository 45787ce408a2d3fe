#include "ptrun/launcher/timeline/worker_events.hpp"

#include <fcntl.h>
#include <sys/socket.h>
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
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::system_error(errno, std::generic_category(), "the workers' events channel");
    EventSocket channel(pair[0], pair[1]);
    int on = 1;
    const int flags = ::fcntl(pair[0], F_GETFL);
    if (::setsockopt(pair[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 || flags < 0 ||
        ::fcntl(pair[0], F_SETFL, flags | O_NONBLOCK) != 0) {
        throw std::system_error(errno, std::generic_category(), "the workers' events channel");
    }
    return channel;
}

EventSocket::~EventSocket() {
    if (fd_ >= 0) ::close(fd_);
    if (sender_ >= 0) ::close(sender_);
}

EventSocket::EventSocket(EventSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), sender_(std::exchange(other.sender_, -1)) {}

EventSocket& EventSocket::operator=(EventSocket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        if (sender_ >= 0) ::close(sender_);
        fd_ = std::exchange(other.fd_, -1);
        sender_ = std::exchange(other.sender_, -1);
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
