#pragma once
/// A host's ptrun (--from-launcher) before its agent runs: the launching ptrun's pipe (stdin,
/// host_fleet.hpp) is watched by one thread blocked in poll(), so that its end (the launcher
/// stopped or died, or the remote shell's connection dropped) is seen at once, also while the
/// rendezvous is still being reached. Once the agent takes the pipe over, this watch is destroyed.

#include <functional>
#include <thread>

#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {

class LauncherPipeWatch {
  public:
    /// Watches `pipe` (not owned; it stays open and unread past EOF) on a thread of its own and
    /// calls `on_end` once on that thread when the pipe reads end-of-file or hangs up; data read
    /// from it is discarded. Throws std::system_error when the thread cannot be set up.
    LauncherPipeWatch(int pipe, std::function<void()> on_end);
    /// Stops watching and joins the thread (at once: it waits on a wake-up pipe too); `on_end`
    /// is not called after this returns.
    ~LauncherPipeWatch();
    LauncherPipeWatch(const LauncherPipeWatch&) = delete;
    LauncherPipeWatch& operator=(const LauncherPipeWatch&) = delete;

  private:
    void watch(int pipe, const std::function<void()>& on_end) const;

    sys::Fd wake_read_;
    sys::Fd wake_write_;
    std::thread thread_;
};

}  // namespace ptrun::launcher
