#include "executor.hpp"

namespace ptrun::ddp::detail {

class Executor::Handle final : public Work {
  public:
    Handle(std::shared_ptr<Executor> executor, std::uint64_t seq,
           std::shared_ptr<std::exception_ptr> error)
        : executor_(std::move(executor)), seq_(seq), error_(std::move(error)) {}

    void wait() override {
        executor_->wait_for(seq_);
        if (*error_) std::rethrow_exception(*error_);
    }
    bool completed() override { return executor_->done(seq_); }

  private:
    std::shared_ptr<Executor> executor_;
    std::uint64_t seq_;
    std::shared_ptr<std::exception_ptr> error_;  ///< written before completed_ passes seq_
};

std::shared_ptr<Executor> Executor::start() {
    std::shared_ptr<Executor> executor(new Executor());
    executor->thread_ = std::thread([raw = executor.get()] { raw->progress_loop(); });
    return executor;
}

Executor::~Executor() { stop(); }

void Executor::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    work_cv_.notify_all();
    done_cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

WorkPtr Executor::submit(Operation op, bool inline_if_idle) {
    auto error = std::make_shared<std::exception_ptr>();
    std::uint64_t seq = 0;
    bool wake = false;
    {
        std::unique_lock lock(mutex_);
        seq = next_seq_++;
        if (inline_if_idle && !running_ && queue_.empty()) {
            queue_.push_back(Item{seq, std::move(op), error});
            run_head(lock);
            return std::make_shared<Handle>(shared_from_this(), seq, std::move(error));
        }
        queue_.push_back(Item{seq, std::move(op), error});
        wake = !running_;
    }
    if (wake) work_cv_.notify_one();
    return std::make_shared<Handle>(shared_from_this(), seq, std::move(error));
}

void Executor::run_head(std::unique_lock<std::mutex>& lock) {
    Item item = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    try {
        item.op();
    } catch (...) {
        *item.error = std::current_exception();
    }
    lock.lock();
    running_ = false;
    completed_ = item.seq;
    // Waiters only: waking the idle progress thread after every inline collective would put a
    // third thread on the cores the ranks share. It is woken only if work is left.
    done_cv_.notify_all();
    if (!queue_.empty()) work_cv_.notify_one();
}

void Executor::progress_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_cv_.wait(lock, [this] { return stopping_ || (!running_ && !queue_.empty()); });
        if (!running_ && !queue_.empty()) {
            run_head(lock);
        } else if (stopping_ && queue_.empty() && !running_) {
            return;
        }
    }
}

void Executor::wait_for(std::uint64_t seq) {
    std::unique_lock lock(mutex_);
    while (completed_ < seq) {
        if (!running_ && !queue_.empty()) {
            run_head(lock);  // claim: run it here rather than wait for the progress thread
        } else {
            done_cv_.wait(lock);
        }
    }
}

bool Executor::done(std::uint64_t seq) {
    std::lock_guard lock(mutex_);
    return completed_ >= seq;
}

}  // namespace ptrun::ddp::detail
