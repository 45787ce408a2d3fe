#include "event_loop.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ptrun::bench {
namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

std::uint64_t raise_fd_limit() {
    rlimit l{};
    getrlimit(RLIMIT_NOFILE, &l);
    l.rlim_cur = l.rlim_max;
    setrlimit(RLIMIT_NOFILE, &l);
    return l.rlim_cur;
}

void Conn::send(std::string request, Reply kind, OnReply on_reply) {
    if (out_off_ == out_.size()) {
        out_.clear();
        out_off_ = 0;
    }
    out_ += request;
    if (kind == Reply::None) {
        flush();
        if (on_reply) on_reply({});
        return;
    }
    pending_.emplace_back(kind, std::move(on_reply));
    flush();
}

void Conn::flush() {
    while (out_off_ < out_.size()) {
        ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            fail("send");
        }
        out_off_ += static_cast<std::size_t>(n);
    }
    const bool more = out_off_ < out_.size();
    if (more != want_out_) loop_.want_writable(*this, more);
}

void Conn::on_readable() {
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            fail("recv");
        }
        if (n == 0) throw std::runtime_error("the store closed a connection");
        in_.append(buf, static_cast<std::size_t>(n));
        if (static_cast<std::size_t>(n) < sizeof buf) break;
    }
    std::size_t off = 0;
    while (!pending_.empty()) {
        std::string_view rest(in_.data() + off, in_.size() - off);
        const std::size_t len = reply_length(pending_.front().first, rest);
        if (len == 0) break;
        auto [kind, cb] = std::move(pending_.front());
        pending_.pop_front();
        off += len;
        const auto payload = reply_payload(kind, rest);
        // A WAIT still pending when its CANCEL_WAIT arrived: the one WAIT_CANCELED answers both.
        if (kind == Reply::Wait && payload[0] == kWaitCanceled && !pending_.empty() &&
            pending_.front().first == Reply::Cancel) {
            auto cancel = std::move(pending_.front().second);
            pending_.pop_front();
            if (cb) cb(payload);
            if (cancel) cancel(payload);
            continue;
        }
        if (cb) cb(payload);
    }
    in_.erase(0, off);
}

EventLoop::EventLoop() : epfd_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (epfd_ < 0) fail("epoll_create1");
}

EventLoop::~EventLoop() {
    close_all();
    ::close(epfd_);
}

void EventLoop::close_all() {
    for (auto& c : conns_) ::close(c->fd_);
    conns_.clear();
}

void EventLoop::want_writable(Conn& c, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.ptr = &c;
    if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd_, &ev) != 0) fail("epoll_ctl");
    c.want_out_ = on;
}

std::vector<Conn*> EventLoop::connect(std::uint16_t port, int count, int window) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<Conn*> out;
    int in_flight = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (int i = 0; i < count; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) fail("socket (raise the open-file limit?)");
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("connect");
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::fcntl(fd, F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
        conns_.push_back(std::unique_ptr<Conn>(new Conn(*this, fd)));
        Conn* c = conns_.back().get();
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) fail("epoll_ctl");
        out.push_back(c);
        ++in_flight;
        const auto nonce = static_cast<std::uint32_t>(i + 1);
        c->send(handshake(nonce), Reply::U32, [&in_flight, nonce](std::string_view echo) {
            std::uint32_t got = 0;
            std::memcpy(&got, echo.data(), 4);
            if (got != nonce) throw std::runtime_error("PING echoed a different nonce");
            --in_flight;
        });
        if (in_flight >= window && !run_until([&] { return in_flight < window; }, deadline)) {
            throw std::runtime_error("handshakes timed out");
        }
    }
    if (!run_until([&] { return in_flight == 0; }, deadline))
        throw std::runtime_error("handshakes timed out");
    return out;
}

void EventLoop::watch_fd(int fd, std::function<void()> readable) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    if (::epoll_ctl(epfd_, readable ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev) != 0)
        fail("epoll_ctl");
    on_fd_ = std::move(readable);
}

void EventLoop::at(Clock::time_point when, std::function<void()> fn) {
    timers_.push(Timer{when, timer_seq_++, std::move(fn)});
}

bool EventLoop::run_until(const std::function<bool()>& done, Clock::time_point deadline) {
    epoll_event events[256];
    while (!done()) {
        auto now = Clock::now();
        while (!timers_.empty() && timers_.top().when <= now) {
            auto fn = timers_.top().fn;
            timers_.pop();
            fn();
        }
        if (done()) break;
        if (now >= deadline) return false;
        auto until = deadline;
        if (!timers_.empty()) until = std::min(until, timers_.top().when);
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
        int n = ::epoll_wait(epfd_, events, 256, static_cast<int>(std::max<long>(0, ms) + 1));
        if (n < 0 && errno != EINTR) fail("epoll_wait");
        for (int i = 0; i < n; ++i) {
            if (events[i].data.ptr == nullptr) {
                if (on_fd_) on_fd_();
                continue;
            }
            auto* c = static_cast<Conn*>(events[i].data.ptr);
            if (events[i].events & EPOLLOUT) c->flush();
            if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) c->on_readable();
        }
    }
    return true;
}

}  // namespace ptrun::bench
