#include "ptrun/launcher/output/log_health.hpp"

#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>

namespace ptrun::launcher {

LogHealth::LogHealth(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}

void LogHealth::write_failed(const std::string& path, int err) {
    if (warned_) return;
    warned_ = true;
    log_->warn(
        "cannot write worker log '{}': {}; its output is being lost from there on (the console "
        "still gets it where --tee sends it); further log write errors are not reported",
        path, std::strerror(err));
}

void LogHealth::check_full(const std::string& path) {
    if (warned_ || path.empty()) return;
    struct statvfs st {};
    if (::statvfs(path.c_str(), &st) != 0) return;
    const auto blocks = ::geteuid() == 0 ? st.f_bfree : st.f_bavail;
    const unsigned long long free_bytes = static_cast<unsigned long long>(blocks) * st.f_frsize;
    const auto inodes = ::geteuid() == 0 ? st.f_ffree : st.f_favail;
    const bool no_inodes = st.f_files > 0 && inodes == 0;
    if (free_bytes >= kLogSpaceLow && !no_inodes) return;
    warned_ = true;
    log_->warn(
        "the file system of worker log '{}' is full ({} bytes, {} inodes free): output the workers "
        "write to their log files themselves (--redirects) may have been cut short",
        path, free_bytes, static_cast<unsigned long long>(inodes));
}

}  // namespace ptrun::launcher
