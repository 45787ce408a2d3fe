#include "shm_collectives.hpp"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "shm_test_ranks.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

namespace {

// n local ranks as threads of this process (same pid), each with its own mapping, as gloo's
// spawnThreads: the first exception is rethrown on the main thread.
void run_ranks(int n, std::size_t slot_bytes, const std::function<void(ShmCollectives&)>& body) {
    test::run_shm_ranks(n, slot_bytes, 0, [&](ShmCollectives& shm, RankBoard&) { body(shm); });
}

CallTimer timer(int ms = 10000) { return CallTimer::start("test", std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("shm allreduce sums across chunk boundaries and odd splits", "[ddp]") {
    for (int n : {2, 3, 4}) {
        for (std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{1023},
                                  std::size_t{20000}, std::size_t{70001}}) {
            std::atomic<int> bad{0};
            run_ranks(n, 2 * 16384, [&](ShmCollectives& shm) {
                const int me = shm.local_index();
                std::vector<std::int64_t> v(count);
                for (std::size_t i = 0; i < count; ++i)
                    v[i] = static_cast<std::int64_t>(i) * (me + 1);
                shm.allreduce(v.data(), count, DType::Int64, ReduceOp::Sum, n, timer());
                const std::int64_t factor = n * (n + 1) / 2;
                for (std::size_t i = 0; i < count; ++i) {
                    if (v[i] != static_cast<std::int64_t>(i) * factor) ++bad;
                }
            });
            INFO("n=" << n << " count=" << count);
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("shm allreduce gives every rank the same bits for floats", "[ddp]") {
    std::vector<std::vector<float>> results(3);
    run_ranks(3, 2 * 8192, [&](ShmCollectives& shm) {
        const int me = shm.local_index();
        std::vector<float> v(10000);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = 0.1f * static_cast<float>(i + 1) / static_cast<float>(me + 3);
        shm.allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Avg, 3, timer());
        results[static_cast<std::size_t>(me)] = v;
    });
    CHECK(results[0] == results[1]);
    CHECK(results[1] == results[2]);
}

TEST_CASE("shm broadcast, allgather and reduce_scatter", "[ddp]") {
    const int n = 3;
    std::atomic<int> bad{0};
    run_ranks(n, 2 * 4096, [&](ShmCollectives& shm) {
        const int me = shm.local_index();
        const std::size_t count = 3000;  // several chunks of 4 KiB
        std::vector<std::int32_t> b(count, me == 1 ? 77 : me);
        shm.broadcast(b.data(), count * 4, 1, timer());
        for (auto x : b) bad += x != 77;
        std::vector<std::int32_t> in(count, me), out(count * n, -1);
        shm.allgather(in.data(), out.data(), count * 4, timer());
        for (int r = 0; r < n; ++r) {
            for (std::size_t i = 0; i < count; ++i)
                bad += out[static_cast<std::size_t>(r) * count + i] != r;
        }
        std::vector<std::int32_t> rs_in(count * n), rs_out(count);
        for (std::size_t j = 0; j < rs_in.size(); ++j) rs_in[j] = static_cast<std::int32_t>(j) + me;
        shm.reduce_scatter(rs_in.data(), rs_out.data(), count, DType::Int32, ReduceOp::Max, n,
                           timer());
        for (std::size_t i = 0; i < count; ++i) {
            bad += rs_out[i] !=
                   static_cast<std::int32_t>(static_cast<std::size_t>(me) * count + i) + n - 1;
        }
        shm.barrier(timer());
    });
    CHECK(bad == 0);
}

TEST_CASE("a rank that never arrives makes the others time out naming it", "[ddp]") {
    std::atomic<int> timeouts{0};
    std::string message;
    run_ranks(3, 2 * 4096, [&](ShmCollectives& shm) {
        if (shm.local_index() == 2) return;  // never joins
        try {
            shm.barrier(timer(200));
        } catch (const CollectiveError& e) {
            ++timeouts;
            if (shm.local_index() == 0) message = e.what();
        }
    });
    CHECK(timeouts == 2);
    CHECK_THAT(message, Catch::Contains("rank 2"));
}

TEST_CASE("the leader stage sees node-reduced chunks and Avg uses the global divisor", "[ddp]") {
    std::atomic<int> bad{0};
    run_ranks(2, 2 * 4096, [&](ShmCollectives& shm) {
        std::vector<double> v(5000, 1.0 + shm.local_index());  // node sum 3.0
        const ShmCollectives::LeaderStage stage = [](void* chunk, std::size_t len) {
            auto* d = static_cast<double*>(chunk);
            for (std::size_t i = 0; i < len; ++i) d[i] *= 2;  // pretend another node had the same
        };
        shm.allreduce(v.data(), v.size(), DType::Float64, ReduceOp::Avg, 4, timer(), &stage);
        for (double x : v) bad += x != 1.5;
    });
    CHECK(bad == 0);
}
