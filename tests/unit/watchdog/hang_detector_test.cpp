#include "ptrun/watchdog/hang_detector.hpp"

#include <catch2/catch.hpp>
#include <csignal>

using namespace ptrun::watchdog;
using namespace std::chrono_literals;

namespace {

const Clock::time_point T0 = Clock::time_point(1000s);  // the agent started watching here
const Clock::duration kTimeout = 60s;

RankProgress running(int lr, std::optional<Clock::duration> last = {}, std::uint64_t count = 10) {
    RankProgress r;
    r.local_rank = lr;
    r.count = last ? count : 0;
    if (last) r.last_progress = T0 + *last;
    return r;
}
RankProgress stopped(int lr, Clock::duration since, std::optional<Clock::duration> last = {}) {
    RankProgress r = running(lr, last);
    r.activity = RankActivity::Stopped;
    r.stopped_since = T0 + since;
    r.stop_signal = SIGSTOP;
    return r;
}
RankProgress unknown_stop(RankProgress r) {
    r.stopped_since.reset();
    return r;
}
RankProgress exited(int lr, bool ok, Clock::duration at) {
    RankProgress r;
    r.local_rank = lr;
    r.activity = RankActivity::Exited;
    r.exited_ok = ok;
    r.exited_at = T0 + at;
    return r;
}
RankProgress in_section(RankProgress r, std::optional<Clock::duration> deadline) {
    r.section = "checkpoint";
    if (deadline) r.section_deadline = T0 + *deadline;
    return r;
}

std::vector<int> hung_ranks(const HangVerdict& v) {
    std::vector<int> out;
    for (const auto& h : v.hung) out.push_back(h.local_rank);
    return out;
}

}  // namespace

TEST_CASE("judge_hangs: one row per rule", "[watchdog][hang]") {
    struct Row {
        const char* what;
        std::vector<RankProgress> ranks;
        Clock::duration now;  // after T0
        std::vector<int> hung;
        std::optional<HangReason> first_reason;
        std::optional<Clock::duration> next_check;  // after T0
    };
    // clang-format off
    const Row rows[] = {
        {"a rank that never beat is in start-up, however long",
         {running(0)}, 10000s, {}, {}, {}},
        {"after its first beat, silence up to the timeout is fine",
         {running(0, 5s)}, 64s, {}, {}, 65s},
        {"silence for the timeout after a beat is a hang",
         {running(0, 5s)}, 65s, {0}, HangReason::NoProgress, {}},
        {"beats from before the agent watched count from when it started watching",
         {running(0, -500s)}, 59s, {}, {}, 60s},
        {"a stopped rank is hung after the timeout even if it never beat",
         {stopped(0, 10s)}, 70s, {0}, HangReason::Stopped, {}},
        {"a stopped rank inside an open-ended section is still hung",
         {in_section(stopped(0, 10s, 5s), {})}, 70s, {0}, HangReason::Stopped, {}},
        {"a stopped rank is not hung before the timeout",
         {stopped(0, 10s, 5s)}, 69s, {}, {}, 70s},
        {"a rank found stopped counts from when watching began",
         {unknown_stop(stopped(0, 10s))}, 60s, {0}, HangReason::Stopped, {}},
        {"an open-ended section suspends the check",
         {in_section(running(0, 5s), {})}, 10000s, {}, {}, {}},
        {"a section deadline beyond the timeout extends the silence allowed",
         {in_section(running(0, 5s), 600s)}, 599s, {}, {}, 600s},
        {"past the deadline and silent for the timeout: a section overrun",
         {in_section(running(0, 5s), 600s)}, 600s, {0}, HangReason::SectionOverrun, {}},
        {"a short section never shortens the timeout",
         {in_section(running(0, 5s), 10s)}, 30s, {}, {}, 65s},
        {"beats inside a section past its deadline keep the rank alive",
         {in_section(running(0, 650s), 600s)}, 700s, {}, {}, 710s},
        {"exited ranks are never hung",
         {exited(0, false, 1s), exited(1, true, 2s)}, 10000s, {}, {}, {}},
        {"a peer's success ends the start-up of ranks that never beat",
         {exited(0, true, 100s), running(1)}, 160s, {1}, HangReason::NotFinishing, {}},
        {"...measured from the first success",
         {exited(0, true, 100s), exited(2, true, 150s), running(1)}, 159s, {}, {}, 160s},
        {"a failed peer does not end the start-up",
         {exited(0, false, 100s), running(1)}, 10000s, {}, {}, {}},
        {"ranks that beat keep their own clock when a peer succeeds",
         {exited(0, true, 100s), running(1, 90s)}, 149s, {}, {}, 150s},
        {"the next check is the earliest moment any rank could become hung",
         {running(0, 30s), running(1, 10s), stopped(2, 20s)}, 40s, {}, {}, 70s},
        {"hung ranks do not set the next check",
         {running(0, 0s), running(1, 50s)}, 60s, {0}, HangReason::NoProgress, 110s},
    };
    // clang-format on
    for (const auto& row : rows) {
        INFO(row.what);
        const HangVerdict v = judge_hangs(row.ranks, kTimeout, T0 + row.now, T0);
        CHECK(hung_ranks(v) == row.hung);
        if (row.first_reason) {
            REQUIRE_FALSE(v.hung.empty());
            CHECK(v.hung.front().reason == *row.first_reason);
        }
        CHECK(v.next_check == (row.next_check ? std::optional(T0 + *row.next_check)
                                              : std::optional<Clock::time_point>()));
    }
}

TEST_CASE("judge_hangs: the rank that stopped progressing first comes first", "[watchdog][hang]") {
    SECTION("a stopped rank before the silent ranks that wait for it") {
        // Ranks 0-2 block in a collective right after rank 3's last beat; rank 3 was SIGSTOPped.
        const auto v =
            judge_hangs({running(0, 10s), running(1, 10s), running(2, 11s), stopped(3, 12s, 11s)},
                        kTimeout, T0 + 80s, T0);
        CHECK(hung_ranks(v) == std::vector<int>{3, 0, 1, 2});
        CHECK(v.hung.front().silent_since == T0 + 12s);
    }
    SECTION("a rank stopped for less than the timeout is hung with its peers, and first") {
        // Rank 1 was SIGSTOPped right after its last beat; rank 0, blocked on it in the next
        // collective, beat last a few ms before ptrun saw the stop, so it reaches T first.
        const auto v = judge_hangs({running(0, 10s), stopped(1, 10s + 5ms, 10s - 5ms)}, kTimeout,
                                   T0 + 70s, T0);
        CHECK(hung_ranks(v) == std::vector<int>{1, 0});
        CHECK(v.hung.front().reason == HangReason::Stopped);
        // Alone, it is not hung before T.
        CHECK(
            judge_hangs({running(0, 69s), stopped(1, 10s + 5ms, 10s - 5ms)}, kTimeout, T0 + 70s, T0)
                .hung.empty());
    }
    SECTION("a section overrun before plain silence") {
        const auto v = judge_hangs({running(0, 5s), in_section(running(1, 20s), 30s)}, kTimeout,
                                   T0 + 100s, T0);
        CHECK(hung_ranks(v) == std::vector<int>{1, 0});
    }
    SECTION("among silent ranks: earliest last progress, then fewest beats, then local rank") {
        const auto v = judge_hangs(
            {running(0, 7s, 50), running(1, 5s, 50), running(2, 7s, 49), running(3, 7s, 49)},
            kTimeout, T0 + 100s, T0);
        CHECK(hung_ranks(v) == std::vector<int>{1, 2, 3, 0});
    }
    SECTION("ranks not finishing come last") {
        const auto v =
            judge_hangs({exited(0, true, 1s), running(1), running(2, 2s)}, kTimeout, T0 + 100s, T0);
        CHECK(hung_ranks(v) == std::vector<int>{2, 1});
    }
}

TEST_CASE("describe_hang says why in words", "[watchdog][hang]") {
    const auto now = T0 + 100s;
    auto r = stopped(3, 20s, 10s);
    const auto v = judge_hangs({r}, kTimeout, now, T0);
    REQUIRE(v.hung.size() == 1);
    CHECK(describe_hang(v.hung[0], r, now) == "stopped by SIGSTOP for 80 s (10 beats)");
    auto silent = running(1, 30s, 42);
    CHECK(describe_hang(judge_hangs({silent}, kTimeout, now, T0).hung.at(0), silent, now) ==
          "no progress for 70 s (42 beats)");
    auto over = in_section(running(2, 10s, 7), 50s);
    CHECK(describe_hang(judge_hangs({over}, kTimeout, now, T0).hung.at(0), over, now) ==
          "in section 'checkpoint' 50 s past its deadline, no progress for 90 s (7 beats)");
    auto late = running(4);
    CHECK(describe_hang(judge_hangs({exited(0, true, 10s), late}, kTimeout, now, T0).hung.at(0),
                        late, now) == "still running 90 s after a peer finished, never beat");
}

TEST_CASE("judge_hangs: a rank with a damaged record is judged as one that never beat",
          "[watchdog][hang]") {
    auto damaged = running(0, 0s, 5);
    damaged.record_problem = "shrank to 0 bytes";
    // Silent for twice the timeout by its last sound sample, yet not hung: its progress is unknown.
    auto v = judge_hangs({damaged, running(1, 119s)}, kTimeout, T0 + 120s, T0);
    CHECK(v.hung.empty());
    // A damaged section says nothing either (no open-ended pass, no deadline).
    auto in_open_section = in_section(damaged, std::nullopt);
    v = judge_hangs({in_open_section, exited(1, true, 10s)}, kTimeout, T0 + 71s, T0);
    REQUIRE(v.hung.size() == 1);
    CHECK(v.hung[0].reason == HangReason::NotFinishing);
    // Stopped is read from the process, not the record: still hung.
    auto stopped_damaged = stopped(0, 0s, 0s);
    stopped_damaged.record_problem = "is corrupt (its header was overwritten)";
    v = judge_hangs({stopped_damaged}, kTimeout, T0 + 61s, T0);
    REQUIRE(v.hung.size() == 1);
    CHECK(v.hung[0].reason == HangReason::Stopped);
}
