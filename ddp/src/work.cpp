#include "ptrun/ddp/work.hpp"

#include "ptrun/ddp/process_group.hpp"
#include "work_state.hpp"

namespace ptrun::ddp {

Work::~Work() = default;
ProcessGroup::~ProcessGroup() = default;

namespace detail {

void WorkState::finish(std::exception_ptr error) {
    {
        std::lock_guard lock(mutex_);
        error_ = std::move(error);
        done_ = true;
    }
    cv_.notify_all();
}

void WorkState::wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return done_; });
    if (error_) std::rethrow_exception(error_);
}

bool WorkState::completed() {
    std::lock_guard lock(mutex_);
    return done_;
}

WorkPtr completed_work(std::exception_ptr error) {
    auto work = std::make_shared<WorkState>();
    work->finish(std::move(error));
    return work;
}

}  // namespace detail
}  // namespace ptrun::ddp
