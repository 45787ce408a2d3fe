#include "ptrun/launcher/membership/session_stores.hpp"

#include <algorithm>

namespace ptrun::launcher {

SessionStores::SessionStores(const StoreConnector& connect, std::chrono::milliseconds io_timeout,
                             std::chrono::milliseconds beat_io_timeout)
    : join_(connect(std::min(io_timeout, beat_io_timeout))) {
    if (join_->wakeable()) return;
    // A connection per role, each with its own timeout: the first one serves the role whose
    // timeout it has.
    if (beat_io_timeout <= io_timeout) {
        beat_ = std::move(join_);
        join_ = connect(io_timeout);
    } else {
        beat_ = connect(beat_io_timeout);
    }
    watch_ = connect(io_timeout);
}

rdzv::Store& SessionStores::store(Role role) const {
    if (shared() || role == Role::Join) return *join_;
    return role == Role::Watch ? *watch_ : *beat_;
}

void SessionStores::interrupt() noexcept {
    join_->interrupt();
    if (watch_) watch_->interrupt();
    if (beat_) beat_->interrupt();
}

SessionStores::Turn::Turn(SessionStores& stores, bool long_wait) : stores_(stores) {
    if (!stores_.shared()) return;
    std::unique_lock lock(stores_.mu_);
    if (long_wait) {
        stores_.free_.wait(lock, [&] { return !stores_.busy_ && stores_.short_calls_ == 0; });
    } else {
        ++stores_.short_calls_;
        if (stores_.busy_ && stores_.long_wait_) stores_.join_->wake();
        stores_.free_.wait(lock, [&] { return !stores_.busy_; });
        --stores_.short_calls_;
    }
    if (!stores_.broken_.empty()) {
        stores_.free_.notify_all();  // a long wait may have waited for this short call to go
        throw rdzv::ConnectionLost("the store connection was lost: " + stores_.broken_);
    }
    stores_.busy_ = true;
    stores_.long_wait_ = long_wait;
}

void SessionStores::Turn::broke(const rdzv::StoreError& e) {
    if (!stores_.shared()) return;
    std::lock_guard lock(stores_.mu_);
    if (stores_.broken_.empty()) stores_.broken_ = e.what();
}

SessionStores::Turn::~Turn() {
    if (!stores_.shared()) return;
    {
        std::lock_guard lock(stores_.mu_);
        stores_.busy_ = false;
    }
    stores_.free_.notify_all();
}

}  // namespace ptrun::launcher
