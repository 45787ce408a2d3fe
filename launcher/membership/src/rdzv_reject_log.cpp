#include "ptrun/launcher/membership/rdzv_reject_log.hpp"

#include <spdlog/spdlog.h>

namespace ptrun::launcher {

RejectLog::RejectLog(std::shared_ptr<spdlog::logger> logger, std::string where,
                     std::chrono::milliseconds interval)
    : logger_(std::move(logger)), where_(std::move(where)), interval_(interval) {}

void RejectLog::note(std::string_view key, std::string_view why) {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (logged_ && now - last_ < interval_) {
        suppressed_ += 1;
        return;
    }
    std::string more;
    if (suppressed_ > 0)
        more = " (" + std::to_string(suppressed_) + " more rejected before this one)";
    logger_->warn("rejected the rendezvous value of '{}' from {}: {}{}", key, where_, why, more);
    logged_ = true;
    last_ = now;
    suppressed_ = 0;
}

}  // namespace ptrun::launcher
