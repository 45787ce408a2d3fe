#pragma once
/// BufferBudget: the server-wide count of memory held for connections, against one cap.

#include <cstddef>

namespace ptrun::rdzv::detail {

/// Bytes held for clients: partial requests, queued replies at their real cost, and the stored
/// values those replies reference (each once). It only counts; the server decides whom to drop
/// when it is over. Server thread only.
class BufferBudget {
  public:
    explicit BufferBudget(std::size_t max) noexcept : max_(max) {}

    void charge(std::size_t bytes) noexcept { used_ += bytes; }
    void release(std::size_t bytes) noexcept { used_ -= bytes; }

    /// True if `more` bytes would not fit.
    bool exceeded_by(std::size_t more) const noexcept { return more > max_ || used_ > max_ - more; }
    /// Bytes that still fit.
    std::size_t free() const noexcept { return used_ < max_ ? max_ - used_ : 0; }
    std::size_t used() const noexcept { return used_; }
    std::size_t max() const noexcept { return max_; }

  private:
    std::size_t max_;
    std::size_t used_ = 0;
};

}  // namespace ptrun::rdzv::detail
