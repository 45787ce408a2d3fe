// Which placement the host gave this VM's first two CPUs: a cache line bounced between two threads
// pinned to them. A round trip through a cache both cores share is short; one that crosses
// cache complexes (another die or socket) is long, and collectives behave differently there
// (bench/RESULTS.md keeps a table per placement). Prints
//   "placement CPU_A CPU_B MIN_NS MEDIAN_NS BATCHES"
// (round trip, ns: the fastest and the median batch of 100), or "placement unknown" with the
// reason when fewer than 20 batches completed within 2 s (both CPUs busy with other work).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(128) Line {
    std::atomic<unsigned> value{0};
};

bool pin(std::size_t cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

int main() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof allowed, &allowed);
    std::vector<std::size_t> cpus;
    for (std::size_t c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
    if (cpus.size() < 2) {
        std::printf("placement unknown (fewer than two CPUs)\n");
        return 0;
    }
    Line ping, pong;
    std::atomic<bool> stop{false};
    std::thread echo([&] {
        pin(cpus[1]);
        unsigned seen = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            const unsigned v = ping.value.load(std::memory_order_acquire);
            if (v != seen) {
                seen = v;
                pong.value.store(v, std::memory_order_release);
            }
        }
    });
    pin(cpus[0]);
    constexpr int kBatch = 100;
    constexpr std::size_t kWanted = 2000;
    std::vector<double> batches;
    unsigned k = 0;
    const auto end = Clock::now() + std::chrono::seconds(2);
    while (batches.size() < kWanted && Clock::now() < end) {
        const auto t0 = Clock::now();
        for (int i = 0; i < kBatch; ++i) {
            ping.value.store(++k, std::memory_order_release);
            while (pong.value.load(std::memory_order_acquire) != k) {
                if ((k & 1023U) == 0 && Clock::now() > end) break;
            }
        }
        batches.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                          kBatch);
    }
    stop = true;
    echo.join();
    if (batches.size() < 20) {
        std::printf("placement unknown (only %zu batches in 2 s: CPUs busy)\n", batches.size());
        return 0;
    }
    std::sort(batches.begin(), batches.end());
    std::printf("placement %zu %zu %.0f %.0f %zu\n", cpus[0], cpus[1], batches.front(),
                batches[batches.size() / 2], batches.size());
    return 0;
}
