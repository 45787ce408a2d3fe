#include "shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <cerrno>
#include <cstring>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp::detail {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& name, int err) {
    throw CollectiveError("shared memory " + what + " '" + name + "': " + std::strerror(err));
}

void* map_fd(int fd, const std::string& name, std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        fail("mmap", name, err);
    }
    ::close(fd);
    return p;
}

}  // namespace

SharedSegment SharedSegment::create(const std::string& name, std::size_t bytes) {
    const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) fail("create", name, errno);
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        const int err = errno;
        ::close(fd);
        ::shm_unlink(name.c_str());
        fail("resize", name, err);
    }
    try {
        return SharedSegment(name, map_fd(fd, name, bytes), bytes, true);
    } catch (...) {
        ::shm_unlink(name.c_str());
        throw;
    }
}

SharedSegment SharedSegment::open(const std::string& name, std::size_t bytes) {
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) fail("open", name, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes) {
        ::close(fd);
        throw CollectiveError("shared memory '" + name + "' is smaller than the " +
                              std::to_string(bytes) + " bytes expected");
    }
    return SharedSegment(name, map_fd(fd, name, bytes), bytes, false);
}

SharedSegment SharedSegment::view(const SharedSegment& mapping) {
    return SharedSegment(mapping.name_, mapping.data_, mapping.size_, false, false);
}

SharedSegment::SharedSegment(std::string name, void* data, std::size_t size, bool owner,
                             bool mapped)
    : name_(std::move(name)), data_(data), size_(size), owner_(owner), mapped_(mapped) {}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owner_(std::exchange(other.owner_, false)),
      mapped_(std::exchange(other.mapped_, true)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
    if (this != &other) {
        release();
        name_ = std::move(other.name_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        owner_ = std::exchange(other.owner_, false);
        mapped_ = std::exchange(other.mapped_, true);
    }
    return *this;
}

SharedSegment::~SharedSegment() { release(); }

void SharedSegment::unlink() noexcept {
    if (owner_) {
        ::shm_unlink(name_.c_str());
        owner_ = false;
    }
}

void SharedSegment::release() noexcept {
    unlink();
    if (data_ != nullptr && mapped_) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace ptrun::ddp::detail
