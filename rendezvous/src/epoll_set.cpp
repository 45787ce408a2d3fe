#include "epoll_set.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::rdzv::detail {
namespace {

/// Consecutive non-empty looks before yielding to the rest of the io_context.
constexpr int kBusyRounds = 16;

int create_epoll() {
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0)
        throw StoreError(std::string("store server: epoll_create1: ") + std::strerror(errno));
    return fd;
}

}  // namespace

EpollSet::EpollSet(boost::asio::io_context& io, ReadyHandler on_ready)
    : descriptor_(io, create_epoll()), on_ready_(std::move(on_ready)) {}

void EpollSet::add(int fd, std::uint64_t id) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (::epoll_ctl(descriptor_.native_handle(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        throw StoreError(std::string("store server: epoll_ctl: ") + std::strerror(errno));
    }
}

void EpollSet::watch_output(int fd, std::uint64_t id, bool on) noexcept {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0U);
    ev.data.u64 = id;
    ::epoll_ctl(descriptor_.native_handle(), EPOLL_CTL_MOD, fd, &ev);
}

void EpollSet::start() { wait(); }

void EpollSet::cancel() noexcept {
    cancelled_ = true;
    boost::system::error_code ignored;
    descriptor_.cancel(ignored);
}

void EpollSet::rearm() {
    if (!pending_ && !cancelled_) wait();
}

void EpollSet::wait() {
    descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [this](const boost::system::error_code& ec) {
                               pending_ = false;
                               if (ec == boost::asio::error::operation_aborted) return;
                               dispatch_and_continue();
                           });
    pending_ = true;
}

void EpollSet::dispatch_and_continue() {
    // While requests keep coming (one often arrives while the last is served), look again at
    // once: re-arming the wait costs an epoll_ctl, a blocking epoll_wait and this epoll_wait
    // again. After kBusyRounds, the rest of Asio's queue (accepts, posted work) runs first.
    for (int round = 0; round < kBusyRounds; ++round) {
        if (dispatch() == 0) {
            wait();
            return;
        }
    }
    boost::asio::post(descriptor_.get_executor(), [this] {
        pending_ = false;
        if (!cancelled_) dispatch_and_continue();
    });
    pending_ = true;
}

int EpollSet::dispatch() {
    const int n = ::epoll_wait(descriptor_.native_handle(), events_.data(),
                               static_cast<int>(events_.size()), 0);
    for (int i = 0; i < n; ++i) {
        on_ready_(events_[static_cast<std::size_t>(i)].data.u64,
                  events_[static_cast<std::size_t>(i)].events);
    }
    return n;
}

}  // namespace ptrun::rdzv::detail
