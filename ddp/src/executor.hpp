#pragma once
/// Executor: runs a group's collectives one at a time, in issue order, off the caller's thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "ptrun/ddp/work.hpp"

namespace ptrun::ddp::detail {

/// One progress thread drains a FIFO of operations. A caller that waits on a Work whose
/// operation has not started yet runs the queue head itself (the "claim"), so issue-then-wait
/// costs no thread hand-off (the 1 KiB latency path) while issue-then-compute still overlaps.
/// Exactly one thread runs operations at any time; operations complete in issue order. Small
/// operations on an idle executor may run inline in submit() (see there).
class Executor : public std::enable_shared_from_this<Executor> {
  public:
    using Operation = std::function<void()>;

    /// Starts the progress thread.
    static std::shared_ptr<Executor> start();
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    /// Queues `op`; the returned Work completes when it ran (rethrowing what it threw). With
    /// `inline_if_idle` and nothing queued or running, runs `op` right here instead and returns
    /// a completed Work: small collectives take microseconds, less than waking a thread.
    WorkPtr submit(Operation op, bool inline_if_idle = false);
    /// Runs everything queued, then joins the progress thread. Idempotent.
    void stop() noexcept;

  private:
    class Handle;
    struct Item {
        std::uint64_t seq;
        Operation op;
        std::shared_ptr<std::exception_ptr> error;
    };
    Executor() = default;
    void progress_loop();
    /// Runs the queue head with the lock released; `lock` is held on entry and exit.
    void run_head(std::unique_lock<std::mutex>& lock);
    void wait_for(std::uint64_t seq);
    bool done(std::uint64_t seq);

    std::mutex mutex_;
    std::condition_variable work_cv_;  ///< the progress thread: work arrived, or stop
    std::condition_variable done_cv_;  ///< wait_for(): an operation completed, or stop
    std::deque<Item> queue_;
    bool running_ = false;  ///< some thread is running an operation
    bool stopping_ = false;
    std::uint64_t next_seq_ = 1;
    std::uint64_t completed_ = 0;  ///< every seq <= completed_ has finished
    std::thread thread_;
};

}  // namespace ptrun::ddp::detail
