#include "strategy_tuner.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace ptrun::ddp::detail {

StrategyTuner::StrategyTuner(RankBoard* boards, int local_size, int me)
    : boards_(boards), local_size_(local_size), me_(me) {}

void StrategyTuner::set_candidates(unsigned mask) {
    candidates_ = mask & ((1U << kCopyStrategies) - 1);
    if (candidates_ == 0) candidates_ = 1U << static_cast<int>(CopyStrategy::Streamed);
    classes_ = {};
}

int StrategyTuner::candidate_count() const { return std::popcount(candidates_); }

CopyStrategy StrategyTuner::nth_candidate(int n) const {
    for (int s = 0; s < kCopyStrategies; ++s) {
        if ((candidates_ & (1U << s)) != 0 && n-- == 0) return static_cast<CopyStrategy>(s);
    }
    return CopyStrategy::Streamed;
}

int StrategyTuner::size_class(std::size_t bytes) {
    // ceil(log2(bytes)): 16 KiB + 1 .. 32 KiB is class 0, .. 2 MiB + 1 .. 4 MiB class 7.
    const int log2_ceil = bytes <= 1 ? 0 : static_cast<int>(std::bit_width(bytes - 1));
    return std::clamp(log2_ceil - 15, 0, kSizeClasses - 1);
}

std::uint32_t StrategyTuner::trials(int size_class) {
    // 16 at 32 KiB, 8 at 64 KiB, 4 at 128 KiB, then kMinTrialsPerCandidate.
    return std::max<std::uint32_t>(kMinTrialsPerCandidate, 16U >> size_class);
}

StrategyTuner::Plan StrategyTuner::next(std::size_t bytes) {
    Plan plan;
    plan.size_class = size_class(bytes);
    const int k = candidate_count();
    if (k == 1) {
        plan.strategy = nth_candidate(0);
        return plan;
    }
    ClassState& st = classes_[static_cast<std::size_t>(plan.size_class)];
    if (st.holding) {
        if (st.calls < st.hold_calls) {
            ++st.calls;
            plan.strategy = st.choice;
            return plan;
        }
        st.holding = false;  // time for a new round; the choice stays the incumbent
        st.calls = 0;
        st.recorded = {};
    }
    // Each candidate runs its calls of the round in a row, the first untimed: it finds the
    // caches as another strategy left them (and single-copy its first pages to pin), the later
    // ones as the candidate leaves them itself, as it would run when chosen.
    const std::uint32_t per_candidate = trials(plan.size_class) + 1;
    if (st.calls < static_cast<std::uint32_t>(k) * per_candidate) {
        plan.strategy = nth_candidate(static_cast<int>(st.calls / per_candidate));
        plan.timed = st.calls % per_candidate != 0;
        plan.warmup = !plan.timed;
        ++st.calls;
        return plan;
    }
    plan.agree = true;
    plan.strategy = st.choice;
    return plan;
}

void StrategyTuner::record(const Plan& plan, std::chrono::nanoseconds elapsed) {
    const auto s = static_cast<std::size_t>(plan.strategy);
    ClassState& st = classes_[static_cast<std::size_t>(plan.size_class)];
    constexpr auto kMax = std::numeric_limits<std::uint32_t>::max() - 1;
    const auto ns = static_cast<std::uint32_t>(
        std::clamp<std::chrono::nanoseconds::rep>(elapsed.count(), 1, kMax));
    auto& cell = boards_[me_].trial_ns[plan.size_class][s];
    // The first time of a round replaces the previous round's: peers read cells only in agree(),
    // which every rank finished before anyone passes this trial's closing barrier.
    if (!st.recorded[s] || ns < cell.load(std::memory_order_relaxed)) {
        cell.store(ns, std::memory_order_relaxed);
    }
    st.recorded[s] = true;
}

CopyStrategy StrategyTuner::agree(int size_class) {
    ClassState& st = classes_[static_cast<std::size_t>(size_class)];
    // Per candidate, the slowest rank's best time: what the collective costs with it.
    std::array<std::uint32_t, kCopyStrategies> worst{};
    for (int s = 0; s < kCopyStrategies; ++s) {
        if ((candidates_ & (1U << s)) == 0) continue;
        for (int r = 0; r < local_size_; ++r) {
            worst[static_cast<std::size_t>(s)] =
                std::max(worst[static_cast<std::size_t>(s)],
                         boards_[r].trial_ns[size_class][s].load(std::memory_order_relaxed));
        }
    }
    int best = -1;
    for (int s = 0; s < kCopyStrategies; ++s) {
        if ((candidates_ & (1U << s)) == 0) continue;
        if (best < 0 ||
            worst[static_cast<std::size_t>(s)] < worst[static_cast<std::size_t>(best)]) {
            best = s;
        }
    }
    auto choice = static_cast<CopyStrategy>(best);
    if (st.has_choice) {  // keep the incumbent unless the winner is clearly faster
        const double incumbent = worst[static_cast<std::size_t>(st.choice)];
        if (incumbent <= (1.0 + kSwitchMargin) * worst[static_cast<std::size_t>(best)]) {
            choice = st.choice;
        }
    }
    const std::uint64_t took = std::max<std::uint32_t>(1, worst[static_cast<std::size_t>(choice)]);
    const std::uint64_t by_time =
        static_cast<std::uint64_t>(std::chrono::nanoseconds(kRecheckAfter).count()) / took;
    const std::uint64_t by_round = std::uint64_t{kMinCallsBetweenRounds}
                                   << std::min(st.rounds, 20U);
    st.hold_calls = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
        std::min(by_time, by_round), kMinCallsBetweenRounds, kMaxCallsBetweenRounds));
    ++st.rounds;
    st.worst = worst;
    st.choice = choice;
    st.has_choice = true;
    st.holding = true;
    st.calls = 1;  // this call runs the choice
    return choice;
}

bool StrategyTuner::streaming_pays(std::size_t bytes) const {
    if (candidates_ == 1U << static_cast<int>(CopyStrategy::Plain)) return false;  // fixed
    const auto& worst = classes_[static_cast<std::size_t>(size_class(bytes))].worst;
    const auto streamed = worst[static_cast<std::size_t>(CopyStrategy::Streamed)];
    const auto plain = worst[static_cast<std::size_t>(CopyStrategy::Plain)];
    return streamed == 0 || plain == 0 || streamed <= plain;
}

bool StrategyTuner::chosen(int size_class, CopyStrategy* strategy) const {
    const ClassState& st = classes_[static_cast<std::size_t>(size_class)];
    if (!st.has_choice) return false;
    if (strategy != nullptr) *strategy = st.choice;
    return true;
}

}  // namespace ptrun::ddp::detail
