#pragma once
/// An owned file descriptor: the one RAII fd of ptrun's modules (header-only, ptrun::sys).

#include <unistd.h>

#include <utility>

namespace ptrun::sys {

/// Owns a file descriptor and closes it on destruction; move-only. -1 is "none".
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd&& other) noexcept : fd_(other.release()) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = other.release();
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;

    /// The descriptor, still owned (-1 for none).
    int get() const noexcept { return fd_; }
    /// True when a descriptor is owned.
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Gives up ownership and returns the descriptor (-1 for none).
    int release() noexcept { return std::exchange(fd_, -1); }
    /// Closes the owned descriptor, if any.
    void reset() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

  private:
    int fd_ = -1;
};

}  // namespace ptrun::sys
