#pragma once
/// DumpWait: waits, on the agent's io_context, for Python stack dumps that workers write into
/// their own files when signalled (faulthandler, from a signal handler: no end marker). A dump
/// counts as written once its file is non-empty and has not grown for `settle`; the wait ends
/// when every file's dump is written or at `limit`, whichever comes first. Driven by inotify
/// (IN_MODIFY) and two timers: nothing polls.

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ptrun::watchdog {

class DumpWait : public std::enable_shared_from_this<DumpWait> {
  public:
    using Done = std::function<void()>;
    struct Timing {
        std::chrono::milliseconds settle{100};  ///< unchanged this long after its last write
        std::chrono::milliseconds limit{1000};  ///< the whole wait, at most
    };

    /// Starts waiting for `paths` (existing files, empty before the signal was sent); `done`
    /// runs once on `io`'s thread, never from within start(). When inotify is unavailable the
    /// wait lasts `limit`.
    static std::shared_ptr<DumpWait> start(boost::asio::io_context& io,
                                           std::vector<std::string> paths, Timing timing,
                                           Done done);
    /// Drops `done` without calling it.
    virtual void cancel() = 0;
    virtual ~DumpWait() = default;
};

}  // namespace ptrun::watchdog
