#include "ptrun/launcher/output/warning_limiter.hpp"

#include <spdlog/spdlog.h>

namespace ptrun::launcher {

WarningLimiter::WarningLimiter(std::shared_ptr<spdlog::logger> logger, std::string left_out,
                               std::chrono::milliseconds interval)
    : logger_(std::move(logger)), left_out_(std::move(left_out)), interval_(interval) {}

void WarningLimiter::warn(std::string_view message) {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (logged_ && now - last_ < interval_) {
        suppressed_ += 1;
        return;
    }
    std::string more;
    if (suppressed_ > 0) {
        more = " (" + std::to_string(suppressed_) + " " + left_out_ + " before this one)";
    }
    logger_->warn("{}{}", message, more);
    logged_ = true;
    last_ = now;
    suppressed_ = 0;
}

}  // namespace ptrun::launcher
