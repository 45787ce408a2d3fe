#include "ptrun/progress/heartbeat_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace ptrun::progress {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
    throw HeartbeatError("heartbeat file '" + path + "': " + what + ": " + std::strerror(err));
}

/// A beat or section start later than this past "now" is not from this boot's CLOCK_MONOTONIC
/// (writers read the coarse clock, which is behind, never ahead).
constexpr std::uint64_t kFutureSlackNs = 1'000'000'000ull;
/// Section deadlines past this after their start are not what heartbeat.h writes
/// (PTRUN_HEARTBEAT_TIMEOUT_MAX_S caps a timeout at 1e9 s).
constexpr std::uint64_t kMaxSectionNs = 1'000'000'000ull * 1'000'000'000ull;

/// Reads the whole record at offset 0; the bytes read (< sizeof *r when the file shrank).
std::size_t read_record(int fd, ptrun_heartbeat_record* r) {
    std::size_t done = 0;
    auto* p = reinterpret_cast<char*>(r);
    while (done < sizeof *r) {
        const ssize_t n = ::pread(fd, p + done, sizeof *r - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    return done;
}

/// The section of `r`, checked against the sequence number in the file after the copy: nullopt
/// (`stable` false) when a writer was changing it; nullopt when none is open.
std::optional<SectionSample> section_of(int fd, const ptrun_heartbeat_record& r, bool* stable) {
    std::uint64_t seq_now = 0;
    *stable =
        r.section_seq % 2 == 0 &&
        ::pread(fd, &seq_now, sizeof seq_now, offsetof(ptrun_heartbeat_record, section_seq)) ==
            static_cast<ssize_t>(sizeof seq_now) &&
        seq_now == r.section_seq;
    if (!*stable || r.section_started_ns == 0) return std::nullopt;
    SectionSample s;
    s.started_ns = r.section_started_ns;
    s.deadline_ns = r.section_deadline_ns;
    s.name.assign(r.section_name, strnlen(r.section_name, sizeof r.section_name));
    return s;
}

/// What makes `r` unusable, or "" when it is sound at `now_ns`.
std::string problem_of(const ptrun_heartbeat_record& r, std::size_t bytes, std::uint64_t now_ns) {
    if (bytes < sizeof r) return "shrank to " + std::to_string(bytes) + " bytes";
    if (std::memcmp(r.magic, PTRUN_HEARTBEAT_MAGIC, sizeof r.magic) != 0 ||
        r.version != PTRUN_HEARTBEAT_VERSION || r.size < sizeof r) {
        return "is corrupt (its header was overwritten)";
    }
    auto seconds_ahead = [now_ns](std::uint64_t t) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", static_cast<double>(t - now_ns) / 1e9);
        return std::string(text);
    };
    if (r.last_progress_ns > now_ns + kFutureSlackNs) {
        return "is corrupt (its last beat is " + seconds_ahead(r.last_progress_ns) +
               " s in the future)";
    }
    if (r.section_started_ns > now_ns + kFutureSlackNs) {
        return "is corrupt (its section starts " + seconds_ahead(r.section_started_ns) +
               " s in the future)";
    }
    if (r.section_started_ns != 0 && r.section_deadline_ns != 0 &&
        (r.section_deadline_ns < r.section_started_ns ||
         r.section_deadline_ns - r.section_started_ns > kMaxSectionNs)) {
        return "is corrupt (its section's deadline is out of range)";
    }
    return "";
}

}  // namespace

std::uint64_t monotonic_now_ns() noexcept { return ptrun_heartbeat_now_ns(); }

HeartbeatFile HeartbeatFile::create(std::string path, int local_rank) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) fail(path, "cannot create it", errno);
    ptrun_heartbeat_record init{};
    std::memcpy(init.magic, PTRUN_HEARTBEAT_MAGIC, sizeof init.magic);
    init.version = PTRUN_HEARTBEAT_VERSION;
    init.size = sizeof init;
    init.local_rank = local_rank;
    init.created_ns = ptrun_heartbeat_now_ns();
    const char* p = reinterpret_cast<const char*>(&init);
    std::size_t done = 0;
    while (done < sizeof init) {
        const ssize_t n = ::write(fd, p + done, sizeof init - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            ::close(fd);
            ::unlink(path.c_str());
            fail(path, "cannot write it", err);
        }
        done += static_cast<std::size_t>(n);
    }
    return HeartbeatFile(std::move(path), fd);
}

HeartbeatFile::~HeartbeatFile() { release(); }

HeartbeatFile::HeartbeatFile(HeartbeatFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      linked_(other.linked_),
      last_sound_(std::move(other.last_sound_)) {
    other.fd_ = -1;
    other.linked_ = false;
}

HeartbeatFile& HeartbeatFile::operator=(HeartbeatFile&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        fd_ = other.fd_;
        linked_ = other.linked_;
        last_sound_ = std::move(other.last_sound_);
        other.fd_ = -1;
        other.linked_ = false;
    }
    return *this;
}

void HeartbeatFile::release() noexcept {
    unlink();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void HeartbeatFile::unlink() noexcept {
    if (linked_ && !path_.empty()) ::unlink(path_.c_str());
    linked_ = false;
}

HeartbeatSample HeartbeatFile::read() const noexcept {
    if (fd_ < 0) return {};
    // A writer holds the section's sequence lock for nanoseconds: a few copies first.
    for (int attempt = 0; attempt < 8; ++attempt) {
        ptrun_heartbeat_record r{};
        const std::size_t bytes = read_record(fd_, &r);
        try {
            std::string problem = problem_of(r, bytes, monotonic_now_ns());
            if (!problem.empty()) {
                HeartbeatSample damaged = last_sound_;
                damaged.problem = std::move(problem);
                return damaged;
            }
            bool stable = false;
            HeartbeatSample s;
            s.section = section_of(fd_, r, &stable);
            if (!stable && attempt + 1 < 8) continue;
            s.count = r.progress_count;
            s.last_progress_ns = r.last_progress_ns;
            s.writer_pid = r.writer_pid;
            last_sound_ = s;
            return s;
        } catch (...) {  // std::bad_alloc formatting a problem or a name: the last sound sample
            return last_sound_;
        }
    }
    return last_sound_;
}

}  // namespace ptrun::progress
