// ptrun::ddp allreduce bandwidth, run under ptrun (--standalone --nproc-per-node N):
//   bench_ptrun_allreduce [BACKEND [MAX_MIB [SHM_COPY]]]   (cpu, 256, auto). Prints, on
// rank 0, one line per size: "ptrun BYTES TIME_US ALGBW_GBPS BUSBW_GBPS MEMCPY_GBPS", where
// busbw = algbw * 2(n-1)/n (nccl-tests) and memcpy is every rank copying the same bytes at once
// (the node's physical limit for moving them). Float32 sum, buffers allocated and faulted once.
// Time per size: the best of 5 trials (each the slowest rank's mean over its iterations).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ptrun/ddp/init.hpp"

using namespace ptrun::ddp;
using Clock = std::chrono::steady_clock;

namespace {

double max_over_ranks(ProcessGroup& pg, double v) {
    pg.allreduce(&v, 1, DType::Float64, ReduceOp::Max)->wait();
    return v;
}

constexpr int kTrials = 5;

int iterations_for(std::size_t bytes) {
    return static_cast<int>(std::clamp<std::size_t>((std::size_t{1} << 30) / bytes, 5, 10000));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string backend = argc > 1 ? argv[1] : "cpu";
    const std::size_t max_bytes = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256) << 20;
    InitOptions options;
    options.backend = parse_backend(backend);
    if (argc > 3) options.shm_copy = parse_shm_copy(argv[3]);
    auto pg = init_process_group_from_environment(options);
    const int n = pg->size();
    std::vector<float> buf(max_bytes / 4, 0.0f), dst(max_bytes / 4, 0.0f);
    std::memset(buf.data(), 0, max_bytes);
    std::memset(dst.data(), 0, max_bytes);
    for (std::size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        const std::size_t count = bytes / 4;
        const int iters = iterations_for(bytes);
        for (int i = 0; i < std::max(2, iters / 10); ++i) {
            pg->allreduce(buf.data(), count, DType::Float32, ReduceOp::Sum)->wait();
        }
        // kTrials timed trials of iters/kTrials each; the best trial (slowest rank) counts, so a
        // preemption by background load spoils one trial, not the figure.
        double us = 1e300;
        for (int trial = 0; trial < kTrials; ++trial) {
            const int n_it = std::max(1, iters / kTrials);
            pg->barrier()->wait();
            const auto t0 = Clock::now();
            for (int i = 0; i < n_it; ++i) {
                pg->allreduce(buf.data(), count, DType::Float32, ReduceOp::Sum)->wait();
            }
            us = std::min(
                us, max_over_ranks(
                        *pg, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                                 n_it));
        }
        pg->barrier()->wait();
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) {
            std::memcpy(dst.data(), buf.data(), bytes);
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
        const double memcpy_us = max_over_ranks(
            *pg, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters);
        const double algbw = static_cast<double>(bytes) / us / 1e3;
        if (pg->rank() == 0) {
            std::printf("ptrun %zu %.2f %.3f %.3f %.3f\n", bytes, us, algbw,
                        algbw * 2.0 * (n - 1) / n, static_cast<double>(bytes) / memcpy_us / 1e3);
            std::fflush(stdout);
        }
    }
    return 0;
}
