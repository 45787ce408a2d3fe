#pragma once
/// A host's ptrun (--from-launcher): besides its end, the launching ptrun's pipe (stdin,
/// host_fleet.hpp) carries the signals the launching ptrun received, one byte each. This relay
/// reads that pipe for the whole run on a thread of its own and raises each such signal in this
/// process, so that the job here stops as it would on one node under the same signals: a first
/// Ctrl-C stops the workers gracefully, a second kills them at once. The rest of ptrun
/// (LauncherPipeWatch, then the agent) watches an inner pipe put on stdin instead, which ends when
/// the launching ptrun's pipe ends (it stopped the job, died, or its connection dropped).

#include <chrono>
#include <optional>
#include <thread>

#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {

/// The byte the launching ptrun writes on a host's pipe for `signo`: SIGINT, SIGTERM or SIGHUP
/// (its stop signals); 0 for any other.
char launcher_signal_byte(int signo);

/// The signal `byte` stands for; nullopt for any other byte (which the relay ignores).
std::optional<int> launcher_byte_signal(char byte);

class LauncherPipeRelay {
  public:
    /// Most signals relayed in a run; more are ignored (a hostile or broken pipe cannot make
    /// this process raise signals without end).
    static constexpr int kMaxSignals = 16;
    /// Two SIGINTs are raised at least this far apart: the agent counts SIGINTs closer than
    /// 100 ms as one Ctrl-C delivered twice, and a pipe may deliver two bytes at once.
    static constexpr std::chrono::milliseconds kInterruptGap{150};

    /// Moves the launching ptrun's pipe off `fd` (stdin) and puts the inner pipe's read end
    /// there, then starts the thread. Throws std::system_error when it cannot.
    explicit LauncherPipeRelay(int fd);
    /// Stops relaying at once and joins the thread; the inner pipe ends.
    ~LauncherPipeRelay();
    LauncherPipeRelay(const LauncherPipeRelay&) = delete;
    LauncherPipeRelay& operator=(const LauncherPipeRelay&) = delete;

  private:
    void relay();

    sys::Fd launcher_;     ///< the launching ptrun's pipe (the thread's alone once started)
    sys::Fd inner_write_;  ///< closed by the thread when `launcher_` ends
    sys::Fd wake_read_;
    sys::Fd wake_write_;
    std::thread thread_;
};

}  // namespace ptrun::launcher
