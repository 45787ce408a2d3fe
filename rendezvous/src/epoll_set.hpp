#pragma once
/// EpollSet: the server's connections in one level-triggered epoll set, waited on through Asio.

#include <sys/epoll.h>

#include <array>
#include <cstdint>
#include <functional>

#include "asio.hpp"

namespace ptrun::rdzv::detail {

/// Asio 1.74's reactor costs one extra syscall per request on a request/response socket (a
/// speculative recv that finds nothing when a read is re-armed, or an epoll_ctl per
/// async_wait). This set keeps every connection registered once, level-triggered; Asio waits on
/// the set's own descriptor, and one wakeup hands every ready connection to `on_ready` (one
/// recv and one send per request, as a bare epoll loop does), looking again at once while it
/// finds more, and re-arming the wait only when a look finds nothing. Server thread only.
class EpollSet {
  public:
    /// Called with the id given to add() and the epoll event bits. Should not throw; if it does,
    /// the exception reaches io_context::run() and rearm() resumes the waiting.
    using ReadyHandler = std::function<void(std::uint64_t id, std::uint32_t events)>;

    /// Creates the set on `io`. Throws StoreError if epoll_create1 fails.
    EpollSet(boost::asio::io_context& io, ReadyHandler on_ready);

    /// Watches `fd` for input (and hang-up) under `id`. Throws StoreError on failure.
    void add(int fd, std::uint64_t id);
    /// Also watches `fd` for output while `on` (a connection with queued replies). Never throws.
    void watch_output(int fd, std::uint64_t id, bool on) noexcept;
    /// Starts waiting; every wakeup re-arms until cancel(). Does not block.
    void start();
    /// Stops waiting (pending wait completes as aborted). Never throws.
    void cancel() noexcept;
    /// Waits again if an exception left the set with neither a wait nor a look pending (call
    /// after io_context::run() threw). Does nothing otherwise or after cancel().
    void rearm();

  private:
    void wait();
    /// Dispatches what is ready; re-arms the wait when nothing was, else looks again soon.
    void dispatch_and_continue();
    /// Hands every ready connection to on_ready_; how many there were.
    int dispatch();

    boost::asio::posix::stream_descriptor descriptor_;  ///< owns the epoll fd
    ReadyHandler on_ready_;
    std::array<epoll_event, 256> events_{};
    bool pending_ = false;  ///< a wait or a posted look will call back
    bool cancelled_ = false;
};

}  // namespace ptrun::rdzv::detail
