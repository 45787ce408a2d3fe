#include "ptrun/watchdog/timer_table.hpp"

#include <algorithm>
#include <cmath>

namespace ptrun::watchdog {

TimerUpdate TimerTable::apply(const TimerRequest& r) {
    auto key = std::make_pair(r.pid, r.scope_id);
    auto it = timers_.find(key);
    if (r.is_release()) {
        if (it == timers_.end()) return TimerUpdate::Unknown;
        timers_.erase(it);
        if (--per_pid_[r.pid] == 0) per_pid_.erase(r.pid);
        return TimerUpdate::Released;
    }
    if (it != timers_.end()) {
        it->second = Timer{r.expiration_time, r.signal};
        return TimerUpdate::Acquired;
    }
    auto& held = per_pid_[r.pid];
    if (held >= limits_.max_per_pid || timers_.size() >= limits_.max_total) {
        if (held == 0) per_pid_.erase(r.pid);
        return TimerUpdate::Refused;
    }
    timers_.emplace(std::move(key), Timer{r.expiration_time, r.signal});
    ++held;
    return TimerUpdate::Acquired;
}

std::vector<TimerExpiry> TimerTable::take_expired(double now) {
    struct Expired {
        double time;
        int signal;
        const std::string* scope;
    };
    std::map<pid_t, std::vector<Expired>> by_pid;
    for (const auto& [key, timer] : timers_) {
        if (timer.expiration_time <= now) {
            by_pid[key.first].push_back({timer.expiration_time, timer.signal, &key.second});
        }
    }
    std::vector<TimerExpiry> out;
    for (auto& [pid, expired] : by_pid) {
        std::stable_sort(expired.begin(), expired.end(),
                         [](const Expired& a, const Expired& b) { return a.time < b.time; });
        TimerExpiry e;
        e.pid = pid;
        const auto decider = std::find_if(expired.begin(), expired.end(),
                                          [](const Expired& x) { return x.signal > 0; });
        const Expired& chosen = decider != expired.end() ? *decider : expired.front();
        e.signal = decider != expired.end() ? chosen.signal : 0;
        e.scope = *chosen.scope;
        e.expiration_time = chosen.time;
        for (const auto& x : expired) e.expired_scopes.push_back(*x.scope);
        out.push_back(std::move(e));
    }
    for (const auto& e : out) forget_pid(e.pid);
    return out;
}

std::optional<double> TimerTable::next_expiration() const {
    std::optional<double> next;
    for (const auto& [key, timer] : timers_) {
        if (std::isinf(timer.expiration_time)) continue;
        if (!next || timer.expiration_time < *next) next = timer.expiration_time;
    }
    return next;
}

std::size_t TimerTable::forget_pid(pid_t pid) {
    auto first = timers_.lower_bound(std::make_pair(pid, std::string()));
    auto last = first;
    std::size_t n = 0;
    while (last != timers_.end() && last->first.first == pid) {
        ++last;
        ++n;
    }
    timers_.erase(first, last);
    per_pid_.erase(pid);
    return n;
}

}  // namespace ptrun::watchdog
