#include "ptrun/launcher/membership/rdzv_reject_log.hpp"

namespace ptrun::launcher {

RejectLog::RejectLog(std::shared_ptr<spdlog::logger> logger, std::string where,
                     std::chrono::milliseconds interval)
    : where_(std::move(where)), limiter_(std::move(logger), "more rejected", interval) {}

void RejectLog::note(std::string_view key, std::string_view why) {
    limiter_.warn("rejected the rendezvous value of '" + std::string(key) + "' from " + where_ +
                  ": " + std::string(why));
}

}  // namespace ptrun::launcher
