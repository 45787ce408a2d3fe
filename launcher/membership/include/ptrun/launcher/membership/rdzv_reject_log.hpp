#pragma once
/// Logs rendezvous values that failed authentication (rdzv_auth.hpp) through a WarningLimiter:
/// the first one at once, then at most one line per interval with the number left out meanwhile,
/// so that a flood of forged values cannot flood the log. Thread-safe.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "ptrun/launcher/output/warning_limiter.hpp"

namespace ptrun::launcher {

class RejectLog {
  public:
    /// `where` names the store the values came from, e.g. "the store at node1:29400".
    RejectLog(std::shared_ptr<spdlog::logger> logger, std::string where,
              std::chrono::milliseconds interval = std::chrono::milliseconds(5'000));

    /// Records that the value of `key` was rejected because `why`; logs a warning unless one was
    /// logged less than an interval ago.
    void note(std::string_view key, std::string_view why);

  private:
    std::string where_;
    WarningLimiter limiter_;
};

}  // namespace ptrun::launcher
