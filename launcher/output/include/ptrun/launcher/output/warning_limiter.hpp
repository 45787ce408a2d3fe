#pragma once
/// Warnings a peer can trigger (a malformed line on torch's file-timer FIFO, a malformed or
/// forged rendezvous event, a failing accept on the health port): the first at once, then at most
/// one per interval, saying how many were left out before it, so that a flood of bad input cannot
/// flood the console or the run log. Thread-safe.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

class WarningLimiter {
  public:
    /// `left_out` names what a count stands for in " (N <left_out> before this one)", e.g.
    /// "more malformed lines".
    WarningLimiter(std::shared_ptr<spdlog::logger> logger, std::string left_out,
                   std::chrono::milliseconds interval = std::chrono::milliseconds(5'000));

    /// Logs `message` as a warning unless one was logged less than an interval ago; then counts
    /// it, and the next warning logged says how many were left out.
    void warn(std::string_view message);

  private:
    std::shared_ptr<spdlog::logger> logger_;
    std::string left_out_;
    std::chrono::milliseconds interval_;
    std::mutex mu_;
    std::chrono::steady_clock::time_point last_{};
    bool logged_ = false;
    long suppressed_ = 0;
};

}  // namespace ptrun::launcher
