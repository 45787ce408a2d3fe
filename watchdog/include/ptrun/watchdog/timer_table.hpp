#pragma once
/// TimerTable: the state of torch's file timer server, as a pure value (no clock, no signals).
/// The agent feeds it the requests its TimerFifo reads, asks it what expired at "now" (wall-clock
/// seconds, the clock FileTimerClient stamps requests with), signals the pids it returns (only
/// pids it knows as its own workers, or processes in their process groups: a request names any
/// pid), and arms one steady_timer for next_expiration() - now.
///
/// Semantics follow torch's FileTimerServer (1.13 and 2.6 alike): a timer is keyed by (pid,
/// scope); acquiring again replaces it; a release (negative expiration) removes it; on expiry,
/// every timer of that pid is dropped, and the pid gets the signal of its earliest-expiring
/// expired timer that asked for one (none: reported, not signalled). torch 2.6 also drops the
/// timers of pids that are no longer running; here the agent calls forget_pid() when it reaps a
/// worker. Bounded: a flood of distinct scopes is refused past the limits, never grown into.

#include <sys/types.h>

#include <utility>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/watchdog/timer_request.hpp"

namespace ptrun::watchdog {

struct TimerLimits {
    std::size_t max_per_pid = 1024;  ///< open scopes one pid may hold
    std::size_t max_total = 16384;   ///< open scopes in all
};

/// What expired for one pid.
struct TimerExpiry {
    pid_t pid = 0;
    int signal = 0;              ///< to send; 0: the timers asked for none
    std::string scope;           ///< the timer that decided (its signal), else the earliest
    double expiration_time = 0;  ///< that timer's
    std::vector<std::string> expired_scopes;  ///< every expired scope, earliest first
    bool operator==(const TimerExpiry&) const = default;
};

/// The outcome of apply().
enum class TimerUpdate {
    Acquired,  ///< a timer was set (or replaced)
    Released,  ///< a timer was removed
    Unknown,   ///< a release for a timer that does not exist (nothing changed)
    Refused,   ///< an acquire beyond TimerLimits (nothing changed)
};

class TimerTable {
  public:
    explicit TimerTable(TimerLimits limits = {}) : limits_(limits) {}

    /// Applies one acquire or release.
    TimerUpdate apply(const TimerRequest& request);
    /// Removes every timer that expired at `now` (expiration <= now) together with every other
    /// timer of the same pids; one entry per pid, in pid order.
    std::vector<TimerExpiry> take_expired(double now);
    /// The earliest finite expiration time held; nullopt when none.
    std::optional<double> next_expiration() const;
    /// Drops every timer of `pid` (it exited); returns how many.
    std::size_t forget_pid(pid_t pid);
    /// Open timers in all.
    std::size_t size() const { return timers_.size(); }

  private:
    struct Timer {
        double expiration_time;
        int signal;
    };
    TimerLimits limits_;
    std::map<std::pair<pid_t, std::string>, Timer> timers_;
    std::map<pid_t, std::size_t> per_pid_;
};

}  // namespace ptrun::watchdog
