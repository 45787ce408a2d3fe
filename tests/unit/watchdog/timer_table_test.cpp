#include "ptrun/watchdog/timer_table.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>

using namespace ptrun::watchdog;

namespace {
TimerRequest acquire(pid_t pid, const char* scope, double when, int signal = SIGKILL) {
    return TimerRequest{pid, scope, when, signal};
}
TimerRequest release(pid_t pid, const char* scope) { return TimerRequest{pid, scope, -1, 0}; }
}  // namespace

TEST_CASE("timers are acquired, replaced and released per pid and scope", "[watchdog][timer]") {
    TimerTable t;
    CHECK(t.apply(acquire(10, "a", 100)) == TimerUpdate::Acquired);
    CHECK(t.apply(acquire(10, "b", 50)) == TimerUpdate::Acquired);
    CHECK(t.apply(acquire(11, "a", 70)) == TimerUpdate::Acquired);
    CHECK(t.size() == 3);
    CHECK(t.next_expiration() == 50);
    CHECK(t.apply(acquire(10, "b", 200)) == TimerUpdate::Acquired);  // re-acquire replaces
    CHECK(t.size() == 3);
    CHECK(t.next_expiration() == 70);
    CHECK(t.apply(release(11, "a")) == TimerUpdate::Released);
    CHECK(t.apply(release(11, "a")) == TimerUpdate::Unknown);
    CHECK(t.apply(release(12, "zz")) == TimerUpdate::Unknown);
    CHECK(t.next_expiration() == 100);
    CHECK(t.take_expired(99).empty());
}

TEST_CASE("an expiry names the pid, its first signalling scope, and drops its timers",
          "[watchdog][timer]") {
    TimerTable t;
    t.apply(acquire(10, "late", 30, SIGTERM));
    t.apply(acquire(10, "quiet", 10, 0));  // expired first, but asks for no signal
    t.apply(acquire(10, "kill", 20, SIGKILL));
    t.apply(acquire(10, "future", 1000));
    t.apply(acquire(20, "ok", 500));
    auto expired = t.take_expired(40);
    REQUIRE(expired.size() == 1);
    CHECK(expired[0] == TimerExpiry{10, SIGKILL, "kill", 20, {"quiet", "kill", "late"}});
    CHECK(t.size() == 1);  // pid 10's future timer went too (torch clears the reaped pid)
    CHECK(t.next_expiration() == 500);
}

TEST_CASE("expired timers without a signal are reported with signal 0", "[watchdog][timer]") {
    TimerTable t;
    t.apply(acquire(5, "b", 2, 0));
    t.apply(acquire(5, "a", 1, 0));
    t.apply(acquire(6, "c", 3, SIGUSR1));
    auto expired = t.take_expired(3);
    REQUIRE(expired.size() == 2);
    CHECK(expired[0] == TimerExpiry{5, 0, "a", 1, {"a", "b"}});
    CHECK(expired[1] == TimerExpiry{6, SIGUSR1, "c", 3, {"c"}});
    CHECK(t.size() == 0);
    CHECK_FALSE(t.next_expiration());
}

TEST_CASE("infinite timers never expire and are not the next expiration", "[watchdog][timer]") {
    TimerTable t;
    t.apply(acquire(5, "forever", std::numeric_limits<double>::infinity()));
    CHECK_FALSE(t.next_expiration());
    CHECK(t.take_expired(1e300).empty());
    CHECK(t.size() == 1);
}

TEST_CASE("forget_pid drops an exited worker's timers only", "[watchdog][timer]") {
    TimerTable t;
    t.apply(acquire(5, "a", 1));
    t.apply(acquire(5, "b", 2));
    t.apply(acquire(6, "a", 3));
    CHECK(t.forget_pid(5) == 2);
    CHECK(t.forget_pid(5) == 0);
    CHECK(t.size() == 1);
    CHECK(t.next_expiration() == 3);
}

TEST_CASE("a flood of scopes is refused past the limits", "[watchdog][timer]") {
    TimerTable t(TimerLimits{.max_per_pid = 3, .max_total = 5});
    for (int i = 0; i < 3; ++i) {
        CHECK(t.apply(acquire(1, std::to_string(i).c_str(), 10)) == TimerUpdate::Acquired);
    }
    CHECK(t.apply(acquire(1, "3", 10)) == TimerUpdate::Refused);
    CHECK(t.apply(acquire(1, "0", 20)) == TimerUpdate::Acquired);  // replacing is not growing
    CHECK(t.apply(acquire(2, "a", 10)) == TimerUpdate::Acquired);
    CHECK(t.apply(acquire(2, "b", 10)) == TimerUpdate::Acquired);
    CHECK(t.apply(acquire(3, "a", 10)) == TimerUpdate::Refused);  // total reached
    CHECK(t.size() == 5);
    t.apply(release(1, "1"));
    CHECK(t.apply(acquire(3, "a", 10)) == TimerUpdate::Acquired);
}
