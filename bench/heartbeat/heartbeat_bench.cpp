// The cost of one heartbeat (docs/heartbeat.md) against its floors, in ns per call:
//   bench_heartbeat RECORD_PATH [ITERATIONS]
// Prints one line per case: "case ns_per_call". Cases, interleaved, each timed over ITERATIONS
// calls: the beat (ptrun::progress::Heartbeat::beat on a mapped record), the detached beat (not
// under ptrun: a null test), and its two parts alone as floors (CLOCK_MONOTONIC_COARSE through
// the vDSO, an atomic add on a private word), the precise CLOCK_MONOTONIC it replaces, plus a
// section enter+leave pair and two threads beating one record at once (the worst sharing a
// worker can cause).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/progress/heartbeat.hpp"

using ptrun::progress::Heartbeat;

namespace {

template <class F>
double ns_per_call(std::uint64_t n, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < n; ++i) f();
    const auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_heartbeat RECORD_PATH [ITERATIONS]\n");
        return 2;
    }
    const std::uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2'000'000;
    Heartbeat hb = Heartbeat::open(argv[1]);
    Heartbeat detached;
    std::atomic<std::uint64_t> word{0};
    volatile std::uint64_t sink = 0;

    std::printf("beat %.2f\n", ns_per_call(n, [&] { hb.beat(); }));
    std::printf("beat_detached %.2f\n", ns_per_call(n, [&] { detached.beat(); }));
    std::printf("floor_coarse_clock %.2f\n",
                ns_per_call(n, [&] { sink = sink + ptrun_heartbeat_coarse_now_ns(); }));
    std::printf("precise_clock %.2f\n",
                ns_per_call(n, [&] { sink = sink + ptrun_heartbeat_now_ns(); }));
    std::printf("floor_atomic_add %.2f\n",
                ns_per_call(n, [&] { word.fetch_add(1, std::memory_order_release); }));
    const std::string name = "checkpoint";
    std::printf("section_enter_leave %.2f\n", ns_per_call(n / 4, [&] {
                    hb.enter(name, std::chrono::seconds(600));
                    hb.leave();
                }));
    double two = 0;
    {
        std::thread other([&] { ns_per_call(n, [&] { hb.beat(); }); });
        two = ns_per_call(n, [&] { hb.beat(); });
        other.join();
    }
    std::printf("beat_two_threads %.2f\n", two);
    return 0;
}
