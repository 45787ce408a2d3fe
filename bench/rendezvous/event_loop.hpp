#pragma once
/// One epoll thread driving many store connections: each connection carries requests in order
/// and hands every reply to the callback queued with its request; timers run on the same thread.
/// This is what lets one process simulate thousands of agents on two cores.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "wire.hpp"

namespace ptrun::bench {

using Clock = std::chrono::steady_clock;
using OnReply = std::function<void(std::string_view payload)>;

class EventLoop;

/// One client connection to the store (non-blocking once connected).
class Conn {
  public:
    /// Queues `request`; `on_reply` runs on the loop thread when its `kind` reply has arrived
    /// (at once for Reply::None, after the request was queued).
    void send(std::string request, Reply kind, OnReply on_reply);

  private:
    friend class EventLoop;
    Conn(EventLoop& loop, int fd) : loop_(loop), fd_(fd) {}
    void flush();
    void on_readable();

    EventLoop& loop_;
    int fd_;
    std::string out_;
    std::size_t out_off_ = 0;
    bool want_out_ = false;
    std::string in_;
    std::deque<std::pair<Reply, OnReply>> pending_;
};

class EventLoop {
  public:
    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    /// Opens `count` connections to 127.0.0.1:`port`, each through the modern handshake, at
    /// most `window` handshakes in flight. Blocks; throws std::runtime_error on a socket error.
    std::vector<Conn*> connect(std::uint16_t port, int count, int window);
    /// Closes every connection.
    void close_all();
    /// Runs `fn` at `when` on the loop thread.
    void at(Clock::time_point when, std::function<void()> fn);
    /// Calls `readable` whenever `fd` (not a store connection; one per loop, e.g. the command
    /// pipe of an agent process) is readable; an empty `readable` stops watching `fd`.
    void watch_fd(int fd, std::function<void()> readable);
    /// Runs the loop until `done()` holds (checked after each batch of events) or `deadline`;
    /// returns done().
    bool run_until(const std::function<bool()>& done, Clock::time_point deadline);

  private:
    friend class Conn;
    void want_writable(Conn& c, bool on);

    struct Timer {
        Clock::time_point when;
        std::uint64_t seq;
        std::function<void()> fn;
        bool operator>(const Timer& o) const {
            return when != o.when ? when > o.when : seq > o.seq;
        }
    };
    int epfd_;
    std::vector<std::unique_ptr<Conn>> conns_;
    std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
    std::uint64_t timer_seq_ = 0;
    std::function<void()> on_fd_;
};

/// Raises RLIMIT_NOFILE to its hard limit; returns the new soft limit.
std::uint64_t raise_fd_limit();

}  // namespace ptrun::bench
