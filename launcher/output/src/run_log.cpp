#include "ptrun/launcher/output/run_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "ptrun/launcher/output/utc_fields.hpp"

namespace ptrun::launcher {

std::string utc_now_text() { return utc_text(std::chrono::system_clock::now()); }

std::string utc_text(std::chrono::system_clock::time_point time) {
    const auto t = utc_fields(time);
    char text[96];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ", t.year, t.month, t.day,
                  t.hour, t.minute, t.second, t.millisecond);
    return text;
}

std::string stamp_lines(std::string_view text, std::string_view stamp) {
    std::string out;
    out.reserve(text.size() + stamp.size() + 2);
    bool line_start = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\033') {  // CSI: ESC [ parameters final-byte (colours, erase line)
            if (i + 1 < text.size() && text[i + 1] == '[') {
                i += 2;
                while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;
            }
            continue;
        }
        if (c == '\r') continue;
        if (line_start) {
            if (c == '\n') continue;  // an empty line: nothing to stamp
            out.append(stamp);
            out.push_back(' ');
            line_start = false;
        }
        out.push_back(c);
        if (c == '\n') line_start = true;
    }
    if (!line_start) out.push_back('\n');
    return out;
}

RunLog::~RunLog() {
    if (fd_ >= 0) ::close(fd_);
}

std::string RunLog::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return std::strerror(errno);
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    path_ = path;
    discarded_ = false;
    std::string first;
    if (dropped_ > 0) {
        first = stamp_lines("(" + std::to_string(dropped_) +
                                " earlier line(s) dropped: more than the run log keeps before "
                                "its directory exists)",
                            utc_now_text());
    }
    append_locked(first + backlog_);
    backlog_.clear();
    return "";
}

void RunLog::discard() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) return;
    discarded_ = true;
    std::string().swap(backlog_);
    dropped_ = 0;
}

void RunLog::write(std::string_view text) {
    if (discarded_) return;
    const std::string stamped = stamp_lines(text, utc_now_text());
    if (stamped.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) {
        append_locked(stamped);
        return;
    }
    if (write_errno_ != 0) return;
    backlog_ += stamped;
    while (backlog_.size() > kMaxBacklog) {  // drop whole lines, oldest first
        const auto end = backlog_.find('\n');
        backlog_.erase(0, end == std::string::npos ? backlog_.size() : end + 1);
        ++dropped_;
    }
}

void RunLog::append_locked(const std::string& stamped) {
    if (write_errno_ != 0 || fd_ < 0) return;
    std::size_t done = 0;
    while (done < stamped.size()) {
        const ssize_t n = ::write(fd_, stamped.data() + done, stamped.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            write_errno_ = n < 0 ? errno : ENOSPC;
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

std::string RunLog::path() const {
    std::lock_guard<std::mutex> lock(mu_);
    return path_;
}

int RunLog::writes_failed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return write_errno_;
}

}  // namespace ptrun::launcher
