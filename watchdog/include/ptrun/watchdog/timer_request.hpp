#pragma once
/// One request of torch's file timer (torch.distributed.elastic.timer.FileTimerClient): a line of
/// JSON a worker writes into the launcher's FIFO (TORCHELASTIC_TIMER_FILE):
///     {"version": 1, "pid": 4242, "scope_id": "train.py#12", "expiration_time": 1.7e9,
///      "signal": 9}
/// expiration_time is wall-clock seconds since the epoch (Python's time.time(), so CLOCK_REALTIME,
/// not the heartbeats' monotonic clock); a negative one releases the scope; Infinity never
/// expires. torch 1.13 and 2.6 write the same format; 2.6 only adds server-side behaviour (see
/// timer_table.hpp). Everything here comes from any process that can open the FIFO: hostile.

#include <sys/types.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ptrun::watchdog {

/// The longest request line accepted, newline excluded: PIPE_BUF, the largest write a FIFO keeps
/// whole (FileTimerClient refuses larger requests itself).
inline constexpr std::size_t kMaxTimerRequestBytes = 4096;
/// Signals a request may ask for: 0 (none, or any negative number: no signal) to 64 (SIGRTMAX).
inline constexpr int kMaxSignal = 64;

/// A request that is not a valid timer request; the message says why (never the whole line).
struct TimerRequestError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct TimerRequest {
    pid_t pid = 0;               ///< the worker the timer belongs to (> 0)
    std::string scope_id;        ///< its scope (expires(scope=...), default "file#line")
    double expiration_time = 0;  ///< seconds since the epoch; < 0: release; +inf: never
    int signal = 0;              ///< what to send on expiry; <= 0 (stored as 0): nothing
    bool is_release() const { return expiration_time < 0; }
    bool operator==(const TimerRequest&) const = default;
};

/// Parses one request line (without its newline). Unknown keys are ignored; version must be 1
/// when present. Throws TimerRequestError: longer than kMaxTimerRequestBytes, not a flat JSON
/// object, pid missing or not an integer in [1, 2^31), scope_id not a string, expiration_time
/// not a number or NaN, signal not an integer or above kMaxSignal.
TimerRequest parse_timer_request(std::string_view line);

/// The request as FileTimerClient writes it (no newline); for tests and tools.
std::string format_timer_request(const TimerRequest& request);

}  // namespace ptrun::watchdog
