#include "ptrun/progress/heartbeat_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace ptrun::progress {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
    throw HeartbeatError("heartbeat file '" + path + "': " + what + ": " + std::strerror(err));
}

/// The section under the record's sequence lock; nullopt when none is open or a writer is in
/// the middle of changing it (a few retries first: a writer holds it for nanoseconds).
std::optional<SectionSample> read_section(const ptrun_heartbeat_record* r) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        const std::uint64_t before = __atomic_load_n(&r->section_seq, __ATOMIC_ACQUIRE);
        if (before % 2 == 1) continue;
        SectionSample s;
        // Acquire loads of fields the writer stores with release: a field seen changed
        // implies the odd sequence number is seen by the check below (no fence needed).
        s.started_ns = __atomic_load_n(&r->section_started_ns, __ATOMIC_ACQUIRE);
        s.deadline_ns = __atomic_load_n(&r->section_deadline_ns, __ATOMIC_ACQUIRE);
        char name[sizeof r->section_name];
        for (std::size_t i = 0; i < sizeof name; ++i) {
            name[i] = __atomic_load_n(&r->section_name[i], __ATOMIC_ACQUIRE);
        }
        if (__atomic_load_n(&r->section_seq, __ATOMIC_RELAXED) != before) continue;
        if (s.started_ns == 0) return std::nullopt;
        s.name.assign(name, strnlen(name, sizeof name));
        return s;
    }
    return std::nullopt;
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
    void* map = ::mmap(nullptr, sizeof init, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (map == MAP_FAILED) {
        ::unlink(path.c_str());
        fail(path, "cannot map it", err);
    }
    return HeartbeatFile(std::move(path), static_cast<ptrun_heartbeat_record*>(map));
}

HeartbeatFile::~HeartbeatFile() { release(); }

HeartbeatFile::HeartbeatFile(HeartbeatFile&& other) noexcept
    : path_(std::move(other.path_)), record_(other.record_), linked_(other.linked_) {
    other.record_ = nullptr;
    other.linked_ = false;
}

HeartbeatFile& HeartbeatFile::operator=(HeartbeatFile&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        record_ = other.record_;
        linked_ = other.linked_;
        other.record_ = nullptr;
        other.linked_ = false;
    }
    return *this;
}

void HeartbeatFile::release() noexcept {
    unlink();
    if (record_ != nullptr) ::munmap(record_, sizeof *record_);
    record_ = nullptr;
}

void HeartbeatFile::unlink() noexcept {
    if (linked_ && !path_.empty()) ::unlink(path_.c_str());
    linked_ = false;
}

HeartbeatSample HeartbeatFile::read() const noexcept {
    HeartbeatSample s;
    if (record_ == nullptr) return s;
    s.count = __atomic_load_n(&record_->progress_count, __ATOMIC_ACQUIRE);
    s.last_progress_ns = __atomic_load_n(&record_->last_progress_ns, __ATOMIC_RELAXED);
    s.writer_pid = __atomic_load_n(&record_->writer_pid, __ATOMIC_RELAXED);
    s.section = read_section(record_);
    return s;
}

}  // namespace ptrun::progress
