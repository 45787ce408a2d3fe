#pragma once
/// WorkState: the Work a backend's progress thread completes.

#include <condition_variable>
#include <exception>
#include <mutex>

#include "ptrun/ddp/work.hpp"

namespace ptrun::ddp::detail {

/// A Work completed by another thread with finish(); wait() blocks on a condition variable. The
/// backend guarantees finish() within the collective's timeout, so wait() needs no deadline.
class WorkState final : public Work {
  public:
    /// Marks the work done (with `error` if it failed) and wakes waiters. Call once.
    void finish(std::exception_ptr error = nullptr);
    void wait() override;
    bool completed() override;

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::exception_ptr error_;
};

/// A Work that is already complete (with `error` if given).
WorkPtr completed_work(std::exception_ptr error = nullptr);

}  // namespace ptrun::ddp::detail
