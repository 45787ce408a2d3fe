#include "ptrun/watchdog/hang_detector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace ptrun::watchdog {
namespace {

Clock::time_point later(Clock::time_point a, Clock::time_point b) { return a < b ? b : a; }

void consider(std::optional<Clock::time_point>& next, Clock::time_point t) {
    if (!next || t < *next) next = t;
}

/// Sort key: reason rank, then the time that orders ranks of that reason, then beats.
std::tuple<int, Clock::time_point, std::uint64_t, int> order_key(const HungRank& h,
                                                                 const RankProgress& r) {
    switch (h.reason) {
        case HangReason::Stopped:
            return {0, h.silent_since, r.count, r.local_rank};
        case HangReason::SectionOverrun:
            return {1, r.section_deadline.value_or(h.silent_since), r.count, r.local_rank};
        case HangReason::NoProgress:
            return {2, h.silent_since, r.count, r.local_rank};
        case HangReason::NotFinishing:
            break;
    }
    return {3, h.silent_since, r.count, r.local_rank};
}

long seconds(Clock::duration d) {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

HangVerdict judge_hangs(const std::vector<RankProgress>& ranks, Clock::duration timeout,
                        Clock::time_point now, Clock::time_point watching_since) {
    HangVerdict verdict;
    std::optional<Clock::time_point> first_success;
    for (const auto& r : ranks) {
        if (r.activity == RankActivity::Exited && r.exited_ok && r.exited_at) {
            if (!first_success || *r.exited_at < *first_success) first_success = r.exited_at;
        }
    }
    std::vector<std::pair<HungRank, const RankProgress*>> hung;
    std::vector<std::pair<HungRank, const RankProgress*>> stopped;  // stopped, not for T yet
    for (const auto& r : ranks) {
        std::optional<HungRank> h;
        std::optional<Clock::time_point> hung_at;  // when this rank becomes hung
        HungRank candidate{r.local_rank, HangReason::NoProgress, {}, r.section};
        switch (r.activity) {
            case RankActivity::Exited:
                continue;
            case RankActivity::Stopped:
                candidate.reason = HangReason::Stopped;
                candidate.silent_since =
                    later(r.stopped_since.value_or(watching_since), watching_since);
                hung_at = candidate.silent_since + timeout;
                break;
            case RankActivity::Running: {
                const bool known = r.record_problem.empty();  // else: as if it never beat
                if (known && r.section && !r.section_deadline) continue;  // announced, open-ended
                if (known && r.last_progress) {
                    candidate.silent_since = later(*r.last_progress, watching_since);
                    hung_at = candidate.silent_since + timeout;
                    if (r.section && r.section_deadline) {
                        candidate.reason = HangReason::SectionOverrun;
                        hung_at = later(*hung_at, *r.section_deadline);
                    }
                } else if (first_success) {
                    candidate.reason = HangReason::NotFinishing;
                    candidate.silent_since = later(*first_success, watching_since);
                    hung_at = candidate.silent_since + timeout;
                    if (known && r.section && r.section_deadline) {
                        hung_at = later(*hung_at, *r.section_deadline);
                    }
                }
                break;
            }
        }
        if (!hung_at) continue;  // start-up: only a beat or an exit can change this rank
        if (now >= *hung_at) {
            hung.emplace_back(candidate, &r);
        } else {
            if (candidate.reason == HangReason::Stopped) stopped.emplace_back(candidate, &r);
            consider(verdict.next_check, *hung_at);
        }
    }
    // A stopped rank cannot progress: once the group is hung it is too, and as its likely cause
    // it is named first (its peers, blocked on it, fell silent a few ms before ptrun saw the stop).
    if (!hung.empty()) hung.insert(hung.end(), stopped.begin(), stopped.end());
    std::stable_sort(hung.begin(), hung.end(), [](const auto& a, const auto& b) {
        return order_key(a.first, *a.second) < order_key(b.first, *b.second);
    });
    for (auto& [h, r] : hung) verdict.hung.push_back(h);
    return verdict;
}

std::string describe_hang(const HungRank& h, const RankProgress& r, Clock::time_point now) {
    const long silent = seconds(now - h.silent_since);
    const std::string beats = r.last_progress ? fmt::format("{} beats", r.count) : "never beat";
    switch (h.reason) {
        case HangReason::Stopped:
            if (r.stop_signal > 0) {
                const char* name = sigabbrev_np(r.stop_signal);
                return fmt::format("stopped by SIG{} for {} s ({})", name ? name : "?", silent,
                                   beats);
            }
            return fmt::format("stopped for {} s ({})", silent, beats);
        case HangReason::SectionOverrun: {
            const long past = r.section_deadline ? seconds(now - *r.section_deadline) : 0;
            return fmt::format("in section '{}' {} s past its deadline, no progress for {} s ({})",
                               h.section.value_or(""), past, silent, beats);
        }
        case HangReason::NoProgress:
            return fmt::format("no progress for {} s ({})", silent, beats);
        case HangReason::NotFinishing:
            break;
    }
    return fmt::format("still running {} s after a peer finished, {}", silent, beats);
}

}  // namespace ptrun::watchdog
