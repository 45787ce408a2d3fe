#include "ptrun/launcher/membership/coordinator_slot.hpp"

#include <utility>

namespace ptrun::launcher {

void CoordinatorSlot::start(CoordinatorOptions options) {
    auto started = std::make_shared<Coordinator>(std::move(options));
    std::lock_guard lock(mu_);
    coordinator_ = std::move(started);
}

void CoordinatorSlot::stop() {
    std::shared_ptr<Coordinator> old;
    {
        std::lock_guard lock(mu_);
        old = std::move(coordinator_);
    }
    old.reset();  // joins its thread outside the lock
}

bool CoordinatorSlot::running() const {
    std::lock_guard lock(mu_);
    return coordinator_ != nullptr;
}

bool CoordinatorSlot::drain(const std::string& self, std::chrono::milliseconds timeout) {
    retired_ = true;
    std::shared_ptr<Coordinator> c;
    {
        std::lock_guard lock(mu_);
        c = coordinator_;
    }
    if (!c) return true;
    if (!c->wait_drained(self, timeout)) return false;
    c.reset();
    stop();
    drained_ = true;
    return true;
}

std::optional<std::vector<std::string>> CoordinatorSlot::wait_members_left(
    const std::string& self, std::chrono::milliseconds timeout) {
    std::shared_ptr<Coordinator> c;
    {
        std::lock_guard lock(mu_);
        c = coordinator_;
    }
    if (!c) return std::nullopt;
    return c->wait_members_left(self, timeout);
}

std::vector<std::string> CoordinatorSlot::spare_hosts() const {
    std::lock_guard lock(mu_);
    return coordinator_ ? coordinator_->spare_hosts() : std::vector<std::string>{};
}

}  // namespace ptrun::launcher
