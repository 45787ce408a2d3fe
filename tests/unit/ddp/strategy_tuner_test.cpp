#include "strategy_tuner.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <vector>

using namespace ptrun::ddp::detail;
using std::chrono::nanoseconds;

namespace {

constexpr unsigned kAll = 0b111;
constexpr std::size_t k1MiB = 1 << 20;

/// Boards for `n` ranks, zeroed as a fresh segment is.
std::unique_ptr<RankBoard[]> boards(int n) {
    return std::unique_ptr<RankBoard[]>(new RankBoard[static_cast<std::size_t>(n)]());
}

/// Runs one trial round of `bytes` on every tuner, each rank timing candidate s as
/// `ns(rank, s)`, then agrees; returns every rank's choice.
template <class F>
std::vector<CopyStrategy> run_round(std::vector<StrategyTuner>& tuners, std::size_t bytes, F ns) {
    for (;;) {
        std::vector<StrategyTuner::Plan> plans;
        for (auto& t : tuners) plans.push_back(t.next(bytes));
        for (std::size_t r = 1; r < plans.size(); ++r) {  // every rank runs the same plan
            REQUIRE(plans[r].strategy == plans[0].strategy);
            REQUIRE(plans[r].timed == plans[0].timed);
            REQUIRE(plans[r].agree == plans[0].agree);
        }
        if (plans[0].agree) {
            std::vector<CopyStrategy> chosen;
            for (auto& t : tuners) chosen.push_back(t.agree(plans[0].size_class));
            return chosen;
        }
        if (!plans[0].timed) continue;
        for (std::size_t r = 0; r < tuners.size(); ++r) {
            tuners[r].record(plans[r], nanoseconds(ns(static_cast<int>(r), plans[r].strategy)));
        }
    }
}

std::vector<StrategyTuner> tuners_for(RankBoard* b, int n, unsigned mask) {
    std::vector<StrategyTuner> tuners;
    for (int r = 0; r < n; ++r) {
        tuners.emplace_back(b, n, r);
        tuners.back().set_candidates(mask);
    }
    return tuners;
}

/// Calls `bytes` until the next trial round's first call (a warm-up, left consumed); checks
/// every held call ran `expect` and returns how many there were.
int calls_until_next_round(std::vector<StrategyTuner>& tuners, std::size_t bytes,
                           CopyStrategy expect) {
    for (int calls = 0;; ++calls) {
        StrategyTuner::Plan plan{};
        for (auto& t : tuners) plan = t.next(bytes);
        if (plan.warmup) return calls;
        REQUIRE(plan.strategy == expect);
        REQUIRE_FALSE(plan.timed);
        REQUIRE(calls < 10'000'000);
    }
}

}  // namespace

TEST_CASE("size classes are ceil(log2) buckets from 32 KiB to 4 MiB", "[ddp]") {
    CHECK(StrategyTuner::size_class(16 * 1024 + 1) == 0);
    CHECK(StrategyTuner::size_class(32 * 1024) == 0);
    CHECK(StrategyTuner::size_class(32 * 1024 + 1) == 1);
    CHECK(StrategyTuner::size_class(k1MiB) == 5);
    CHECK(StrategyTuner::size_class(4 * k1MiB) == kSizeClasses - 1);
    CHECK(StrategyTuner::size_class(64 * k1MiB) == kSizeClasses - 1);
    CHECK(StrategyTuner::trials(0) > StrategyTuner::trials(kSizeClasses - 1));
    CHECK(StrategyTuner::trials(kSizeClasses - 1) == StrategyTuner::kMinTrialsPerCandidate);
}

TEST_CASE("a single candidate runs untimed and never asks to agree", "[ddp]") {
    auto b = boards(2);
    StrategyTuner t(b.get(), 2, 0);
    t.set_candidates(1U << static_cast<int>(CopyStrategy::Plain));
    for (int i = 0; i < 1000; ++i) {
        const auto plan = t.next(k1MiB);
        CHECK(plan.strategy == CopyStrategy::Plain);
        CHECK_FALSE(plan.timed);
        CHECK_FALSE(plan.agree);
    }
}

TEST_CASE("every rank picks the candidate whose slowest rank was fastest", "[ddp]") {
    auto b = boards(3);
    auto tuners = tuners_for(b.get(), 3, kAll);
    // Streamed is fastest on ranks 0 and 1 but slow on rank 2; plain is even everywhere.
    const auto chosen = run_round(tuners, k1MiB, [](int rank, CopyStrategy s) {
        switch (s) {
            case CopyStrategy::Streamed:
                return rank == 2 ? 900 : 100;
            case CopyStrategy::Plain:
                return 300;
            case CopyStrategy::SingleCopy:
                return 400;
        }
        return 0;
    });
    for (auto c : chosen) CHECK(c == CopyStrategy::Plain);
    CopyStrategy held{};
    REQUIRE(tuners[1].chosen(StrategyTuner::size_class(k1MiB), &held));
    CHECK(held == CopyStrategy::Plain);
}

TEST_CASE("each candidate's first call of a round is an untimed warm-up", "[ddp]") {
    auto b = boards(2);
    auto tuners = tuners_for(b.get(), 2, kAll);
    const std::size_t bytes = 4 * k1MiB;
    const auto per = StrategyTuner::trials(StrategyTuner::size_class(bytes)) + 1;
    for (int s = 0; s < kCopyStrategies; ++s) {
        for (std::uint32_t i = 0; i < per; ++i) {
            const auto plan = tuners[0].next(bytes);
            tuners[1].next(bytes);
            CHECK(plan.strategy == static_cast<CopyStrategy>(s));
            CHECK(plan.timed == (i != 0));
            CHECK(plan.warmup == (i == 0));
        }
    }
    CHECK(tuners[0].next(bytes).agree);
}

TEST_CASE("the incumbent stays unless another is faster by the switch margin", "[ddp]") {
    auto b = boards(2);
    auto tuners = tuners_for(b.get(), 2, kAll);
    const std::size_t bytes = 256 * 1024;
    auto first = run_round(tuners, bytes, [](int, CopyStrategy s) {
        return s == CopyStrategy::SingleCopy ? 1000 : 5000;
    });
    CHECK(first[0] == CopyStrategy::SingleCopy);
    // Next round: plain 1 % faster, within the margin: single-copy stays.
    calls_until_next_round(tuners, bytes, CopyStrategy::SingleCopy);
    auto second = run_round(tuners, bytes, [](int, CopyStrategy s) {
        return s == CopyStrategy::Plain ? 990 : s == CopyStrategy::SingleCopy ? 1000 : 5000;
    });
    CHECK(second[0] == CopyStrategy::SingleCopy);
    CHECK(second[1] == CopyStrategy::SingleCopy);
    // Then plain twice as fast: it takes over.
    calls_until_next_round(tuners, bytes, CopyStrategy::SingleCopy);
    auto third = run_round(tuners, bytes, [](int, CopyStrategy s) {
        return s == CopyStrategy::Plain ? 500 : s == CopyStrategy::SingleCopy ? 1000 : 5000;
    });
    CHECK(third[0] == CopyStrategy::Plain);
    CHECK(third[1] == CopyStrategy::Plain);
}

TEST_CASE("rounds come back soon at first, then after about two seconds of use", "[ddp]") {
    auto b = boards(2);
    auto tuners = tuners_for(b.get(), 2, kAll);
    const std::size_t bytes = 1 * k1MiB;
    const auto fixed = [](int, CopyStrategy s) {
        return s == CopyStrategy::Plain ? 100'000 : 900'000;
    };
    std::vector<int> gaps;
    for (int round = 0; round < 10; ++round) {
        run_round(tuners, bytes, fixed);
        gaps.push_back(calls_until_next_round(tuners, bytes, CopyStrategy::Plain));
    }
    // The agreeing call counts as the first held one.
    CHECK(gaps[0] + 1 == static_cast<int>(StrategyTuner::kMinCallsBetweenRounds));
    CHECK(gaps[1] + 1 == 2 * static_cast<int>(StrategyTuner::kMinCallsBetweenRounds));
    // 100 us a call: about 2 s is 20,000 calls, where the doubling stops.
    CHECK(gaps.back() + 1 == 20'000);
}

TEST_CASE("set_candidates restarts every class", "[ddp]") {
    auto b = boards(2);
    auto tuners = tuners_for(b.get(), 2, kAll);
    run_round(tuners, k1MiB, [](int, CopyStrategy) { return 100; });
    CHECK(tuners[0].chosen(StrategyTuner::size_class(k1MiB), nullptr));
    tuners[0].set_candidates(0b011);
    CHECK_FALSE(tuners[0].chosen(StrategyTuner::size_class(k1MiB), nullptr));
    CHECK(tuners[0].candidates() == 0b011);
}

TEST_CASE("slot writes stream until a round times plain stores faster at that size", "[ddp]") {
    auto b = boards(2);
    auto tuners = tuners_for(b.get(), 2, kAll);
    CHECK(tuners[0].streaming_pays(k1MiB));
    run_round(tuners, k1MiB, [](int, CopyStrategy s) {
        return s == CopyStrategy::Streamed ? 900 : s == CopyStrategy::Plain ? 600 : 300;
    });
    CHECK_FALSE(tuners[0].streaming_pays(k1MiB));
    CHECK_FALSE(tuners[1].streaming_pays(k1MiB));
    CHECK(tuners[0].streaming_pays(4 * k1MiB));  // another class: not timed yet
    calls_until_next_round(tuners, k1MiB, CopyStrategy::SingleCopy);
    run_round(tuners, k1MiB, [](int, CopyStrategy s) {
        return s == CopyStrategy::Streamed ? 500 : s == CopyStrategy::Plain ? 600 : 300;
    });
    CHECK(tuners[0].streaming_pays(k1MiB));
    tuners[0].set_candidates(1U << static_cast<int>(CopyStrategy::Plain));  // shm_copy=plain
    CHECK_FALSE(tuners[0].streaming_pays(4 * k1MiB));
}
