#pragma once
/// The long-polls of `ptrun logs --follow` a node holds (log_follow.hpp): each waits,
/// on the agent's io_context, until a worker's log file is written, the job ends, or its own wait
/// passes. Event-driven (a timer per poll, no polling), and bounded: at most kMaxLogFollowers are
/// held at once. An output relay says when it wrote (--tee, filters); a log file the worker writes
/// itself (--redirects alone) is watched with inotify once someone follows.

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/watchdog/log_follow.hpp"

namespace ptrun::watchdog {

class LogFollowers {
  public:
    using Reply = std::function<void(int status, std::string text)>;

    explicit LogFollowers(boost::asio::io_context& io) : io_(io) {}
    LogFollowers(const LogFollowers&) = delete;
    LogFollowers& operator=(const LogFollowers&) = delete;

    /// Answers `query` at once when the write count differs from what it saw or the job ended,
    /// else holds it up to its wait; 503 when kMaxLogFollowers are held already.
    void wait(const LogsWaitQuery& query, Reply reply);
    /// A relay wrote to a worker's log file: counts it and answers every held poll.
    void written();
    /// `path` is a log file a worker writes itself: each write to it counts as written(), from
    /// the first poll on (inotify; without it, such lines wait for the poll's own wait).
    void watch(const std::string& path);
    /// Forgets the files watch() named (a new attempt writes new ones).
    void unwatch_all();
    /// The job ended with `code`: answers every held poll, and every later one at once.
    void ended(int code);
    /// Whether any follower ever asked (the agent then lingers at its end: kFollowerLinger).
    bool followed() const { return followed_; }

  private:
    struct Held {
        Reply reply;
        std::unique_ptr<boost::asio::steady_timer> timer;
    };
    void answer(std::uint64_t id);
    std::string text() const;
    /// Starts inotify on the watched files (the first poll), or adds `path`'s watch.
    void start_watching();
    void add_watch(const std::string& path);
    void read_events();

    boost::asio::io_context& io_;
    std::uint64_t count_ = 0;
    std::optional<int> exit_code_;
    std::uint64_t next_id_ = 0;
    std::map<std::uint64_t, Held> held_;
    bool followed_ = false;
    std::vector<std::string> watched_;  ///< watch() paths of this attempt
    std::vector<int> watches_;          ///< their inotify watch descriptors
    std::unique_ptr<boost::asio::posix::stream_descriptor> inotify_;  ///< null until followed
    std::array<char, 4096> events_{};
};

}  // namespace ptrun::watchdog
