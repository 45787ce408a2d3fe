// The shared-memory allreduce under each copy strategy and under the tuner that picks them.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "reduce_kernels.hpp"
#include "shm_collectives.hpp"
#include "shm_test_ranks.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

namespace {

constexpr std::size_t kSlot = 2 * 64 * 1024;

/// `n` local ranks over a segment whose header sets `copy_mode` (0 tuned, 1 + CopyStrategy fixed).
void run_group(int n, std::uint32_t copy_mode,
               const std::function<void(ShmCollectives&, RankBoard&)>& body) {
    test::run_shm_ranks(n, kSlot, copy_mode, body);
}

CallTimer timer() { return CallTimer::start("allreduce", std::chrono::seconds(30)); }

/// Rank r's input: fractions, so that the order of the sum shows in the bits.
template <class T>
std::vector<T> input(int rank, std::size_t count) {
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto k =
            static_cast<long long>((i * 7919 + static_cast<std::size_t>(rank) * 104729) % 2003) -
            1000;
        v[i] = static_cast<T>(static_cast<double>(k) / 7.0);
    }
    return v;
}

/// What every rank must hold: the inputs reduced in rank order by reduce_n.
template <class T>
std::vector<T> reference(int n, std::size_t count, ReduceOp op) {
    std::vector<std::vector<T>> in;
    std::vector<const void*> srcs;
    for (int r = 0; r < n; ++r) in.push_back(input<T>(r, count));
    for (auto& v : in) srcs.push_back(v.data());
    std::vector<T> out(count);
    reduce_n(dtype_of<T>(), op, out.data(), srcs.data(), n, count, n);
    return out;
}

template <class T>
void check_all_ops(int n, std::uint32_t copy_mode, const std::vector<std::size_t>& counts) {
    for (const std::size_t count : counts) {
        for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
            const auto want = reference<T>(n, count, op);
            std::atomic<int> wrong{0};
            run_group(n, copy_mode, [&](ShmCollectives& shm, RankBoard&) {
                auto v = input<T>(shm.local_index(), count);
                shm.allreduce(v.data(), count, dtype_of<T>(), op, n, timer());
                wrong += v != want;
            });
            INFO("n=" << n << " copy_mode=" << copy_mode << " dtype=" << dtype_name(dtype_of<T>())
                      << " op=" << reduce_op_name(op) << " count=" << count);
            CHECK(wrong == 0);
        }
    }
}

std::uint32_t fixed(CopyStrategy s) { return 1 + static_cast<std::uint32_t>(s); }

}  // namespace

TEMPLATE_TEST_CASE("every copy strategy gives every rank the rank-order result", "[ddp]", float,
                   double, std::int32_t, std::int64_t) {
    // Past the one-shot limit, odd splits, several slot chunks; float also past one segment.
    std::vector<std::size_t> counts{4099, 300'007};
    if (sizeof(TestType) == 4) counts.push_back(ShmCollectives::kSegmentBytes / 4 + 12'345);
    for (const CopyStrategy s :
         {CopyStrategy::Streamed, CopyStrategy::Plain, CopyStrategy::SingleCopy}) {
        for (int n : {2, 3, 4}) check_all_ops<TestType>(n, fixed(s), counts);
    }
}

TEST_CASE("the tuner keeps results exact through trials, agreement and holds", "[ddp]") {
    for (int n : {2, 3}) {
        const std::size_t small = 16'411, big = ShmCollectives::kSegmentBytes / 4 + 5000;
        const auto want_small = reference<float>(n, small, ReduceOp::Sum);
        const auto want_big = reference<float>(n, big, ReduceOp::Sum);
        std::atomic<int> wrong{0};
        // Per rank, checked here: Catch's assertions are not thread-safe (TSan: a data race).
        const auto ranks = static_cast<std::size_t>(n);
        std::vector<unsigned> candidates(ranks);
        std::vector<CopyStrategy> chosen(ranks);
        std::vector<char> has_chosen(ranks);
        run_group(n, 0, [&](ShmCollectives& shm, RankBoard&) {
            // Three rounds of the small class, the big one's segments interleaved.
            for (int call = 0; call < 300; ++call) {
                const bool is_big = call % 25 == 0;
                auto v = input<float>(shm.local_index(), is_big ? big : small);
                shm.allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Sum, n, timer());
                wrong += v != (is_big ? want_big : want_small);
            }
            const auto me = static_cast<std::size_t>(shm.local_index());
            candidates[me] = shm.tuner().candidates();
            has_chosen[me] =
                shm.tuner().chosen(StrategyTuner::size_class(small * 4), &chosen[me]) ? 1 : 0;
        });
        CHECK(wrong == 0);
        for (std::size_t r = 0; r < ranks; ++r) {
            INFO("rank " << r);
            CHECK(candidates[r] == 0b111);
            CHECK(has_chosen[r] == 1);
            CHECK(chosen[r] == chosen[0]);  // every rank agreed
        }
    }
}

TEST_CASE("tuning leaves single-copy out where a peer's memory cannot be read", "[ddp]") {
    const std::size_t count = 100'000;
    const auto want = reference<double>(2, count, ReduceOp::Max);
    std::atomic<int> wrong{0};
    std::vector<unsigned> candidates(2);  // checked here: Catch is not thread-safe
    run_group(2, 0, [&](ShmCollectives& shm, RankBoard& mine) {
        // Rank 1 advertises an unmapped check word, as a peer outside ptrace's reach reads.
        if (shm.local_index() == 1) mine.probe.store(8);
        for (int call = 0; call < 100; ++call) {
            auto v = input<double>(shm.local_index(), count);
            shm.allreduce(v.data(), count, DType::Float64, ReduceOp::Max, 2, timer());
            wrong += v != want;
        }
        candidates[static_cast<std::size_t>(shm.local_index())] = shm.tuner().candidates();
    });
    CHECK(wrong == 0);
    CHECK(candidates == std::vector<unsigned>{0b011, 0b011});
}

TEST_CASE("single-copy asked for where a peer's memory cannot be read fails saying so", "[ddp]") {
    std::atomic<int> refused{0};
    run_group(2, fixed(CopyStrategy::SingleCopy), [&](ShmCollectives& shm, RankBoard& mine) {
        if (shm.local_index() == 1) mine.probe.store(8);
        std::vector<float> v(50'000, 1.0f);
        try {
            shm.allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Sum, 2, timer());
        } catch (const CollectiveError& e) {
            refused +=
                std::string(e.what()).find("single-copy is not possible") != std::string::npos;
        }
    });
    CHECK(refused == 2);
}

TEST_CASE("single-copy pieces shrink with many peers and stay page multiples", "[ddp]") {
    CHECK(ShmCollectives::piece_bytes(2) == ShmCollectives::kPieceBytes);
    CHECK(ShmCollectives::piece_bytes(4) == ShmCollectives::kPieceBytes);
    CHECK(ShmCollectives::piece_bytes(9) == 128 * 1024);
    CHECK(ShmCollectives::piece_bytes(256) == ShmCollectives::kMinPieceBytes);
    for (int n = 2; n < 300; ++n) {
        const std::size_t piece = ShmCollectives::piece_bytes(n);
        CHECK(piece % 4096 == 0);
        CHECK(piece * static_cast<std::size_t>(n - 1) <=
              std::max(ShmCollectives::kPulledBytes,
                       ShmCollectives::kMinPieceBytes * static_cast<std::size_t>(n - 1)));
    }
}
