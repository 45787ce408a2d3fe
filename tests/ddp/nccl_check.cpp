// The nccl backend: every collective x dtype x op on device buffers, under ptrun or alone (world
// size 1), on a real GPU or over tests/ddp/fake_nccl. Exits 77 (ctest: skipped) with the reason
// when libnccl.so.2, the CUDA runtime or a device is missing.
//   nccl_check [small]               counts 1, 1000 and 2^20 elements (small: 1, 1000, 4099)
//   nccl_check silent-rank R         rank R never calls; the others must get CollectiveTimeout
//                                    (1 s) and exit 1, printing "rank N: timed out: ..."
//   nccl_check abandon-rank R        rank R never calls; the others issue a barrier, never wait
//                                    for it, and destroy the group: printing "rank N: shut down
//                                    in MS ms", within about the 1 s timeout, not a hang

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl/nccl_api.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/init.hpp"

using namespace ptrun::ddp;
namespace nc = ptrun::ddp::detail::nccl;

namespace {

int failures = 0;

template <class T>
T value(int rank, std::size_t i) {
    return static_cast<T>(
        static_cast<long long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 29) - 10);
}

template <class T>
T reduce_expected(int n, std::size_t i, ReduceOp op) {
    T acc = value<T>(0, i);
    for (int r = 1; r < n; ++r) {
        const T v = value<T>(r, i);
        if (op == ReduceOp::Min)
            acc = v < acc ? v : acc;
        else if (op == ReduceOp::Max)
            acc = acc < v ? v : acc;
        else
            acc = static_cast<T>(acc + v);
    }
    return op == ReduceOp::Avg ? static_cast<T>(acc / static_cast<T>(n)) : acc;
}

struct DeviceBuffer {
    const nc::Api& api;
    void* ptr = nullptr;
    DeviceBuffer(const nc::Api& a, std::size_t bytes) : api(a) {
        api.Malloc(&ptr, bytes == 0 ? 8 : bytes);
    }
    ~DeviceBuffer() { api.Free(ptr); }
    template <class T>
    void put(const std::vector<T>& v) {
        api.Memcpy(ptr, v.data(), v.size() * sizeof(T), 4);
    }
    template <class T>
    std::vector<T> get(std::size_t n) {
        std::vector<T> v(n);
        api.Memcpy(v.data(), ptr, n * sizeof(T), 4);
        return v;
    }
};

template <class T>
void check(ProcessGroup& pg, const nc::Api& api, std::size_t count) {
    const int n = pg.size(), me = pg.rank();
    constexpr DType dt = dtype_of<T>();
    std::vector<T> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = value<T>(me, i);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
        DeviceBuffer d(api, count * sizeof(T));
        d.put(host);
        pg.allreduce(d.ptr, count, dt, op)->wait();
        auto got = d.get<T>(count);
        for (std::size_t i = 0; i < count; ++i) failures += got[i] != reduce_expected<T>(n, i, op);
        DeviceBuffer in(api, count * static_cast<std::size_t>(n) * sizeof(T)),
            out(api, count * sizeof(T));
        std::vector<T> rs(count * static_cast<std::size_t>(n));
        for (std::size_t j = 0; j < rs.size(); ++j) rs[j] = value<T>(me, j);
        in.put(rs);
        pg.reduce_scatter(in.ptr, out.ptr, count, dt, op)->wait();
        got = out.get<T>(count);
        for (std::size_t i = 0; i < count; ++i) {
            failures +=
                got[i] != reduce_expected<T>(n, static_cast<std::size_t>(me) * count + i, op);
        }
    }
    DeviceBuffer b(api, count * sizeof(T));
    b.put(host);
    pg.broadcast(b.ptr, count, dt, 0)->wait();
    auto got = b.get<T>(count);
    for (std::size_t i = 0; i < count; ++i) failures += got[i] != value<T>(0, i);
    DeviceBuffer out(api, count * static_cast<std::size_t>(n) * sizeof(T));
    pg.allgather(b.ptr, out.ptr, count, dt)->wait();
    got = out.get<T>(count * static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < got.size(); ++i) failures += got[i] != value<T>(0, i % count);
    pg.barrier()->wait();
}

/// The nccl group with a 1 s collective timeout, for the failure modes.
std::unique_ptr<ProcessGroup> group_with_short_timeout() {
    InitOptions options{.backend = Backend::Nccl};
    options.timeout = std::chrono::seconds(1);
    return init_process_group_from_environment(options);
}

/// Rank `silent` sleeps past the others' timeout; they must report CollectiveTimeout.
int run_silent_rank(int silent) {
    auto pg = group_with_short_timeout();
    if (pg->rank() == silent) {
        std::this_thread::sleep_for(std::chrono::seconds(20));  // until ptrun stops the group
        return 0;
    }
    // Report our own timeout before ptrun stops the group: the first rank to time out exits 1
    // and ptrun sends SIGTERM to the others, whose own 1 s timer may not have fired yet.
    ::signal(SIGTERM, SIG_IGN);
    try {
        pg->barrier()->wait();
        std::printf("rank %d: barrier completed without rank %d\n", pg->rank(), silent);
    } catch (const CollectiveTimeout& e) {
        std::printf("rank %d: timed out: %s\n", pg->rank(), e.what());
    }
    std::fflush(stdout);
    return 1;
}

/// Rank `silent` never calls; the others abandon a barrier and still shut down in bounded time.
int run_abandoned_work(int silent) {
    auto pg = group_with_short_timeout();
    if (pg->rank() == silent) {
        std::this_thread::sleep_for(std::chrono::seconds(3));
        return 0;
    }
    const int rank = pg->rank();
    const auto start = std::chrono::steady_clock::now();
    pg->barrier();  // never waited for
    pg.reset();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    std::printf("rank %d: shut down in %lld ms\n", rank, static_cast<long long>(ms.count()));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    std::string why;
    const nc::Api* api = nc::load(&why);
    if (api == nullptr) {
        std::printf("SKIP: nccl backend cannot load: %s\n", why.c_str());
        return 77;
    }
    if (nc::device_count() == 0) {
        std::printf("SKIP: no CUDA device visible\n");
        return 77;
    }
    try {
        if (mode == "silent-rank" && argc > 2) return run_silent_rank(std::atoi(argv[2]));
        if (mode == "abandon-rank" && argc > 2) return run_abandoned_work(std::atoi(argv[2]));
        auto pg = init_process_group_from_environment(InitOptions{.backend = Backend::Nccl});
        const std::size_t large = mode == "small" ? 4099 : std::size_t{1} << 20;
        for (std::size_t count : {std::size_t{1}, std::size_t{1000}, large}) {
            check<float>(*pg, *api, count);
            check<double>(*pg, *api, count);
            check<std::int32_t>(*pg, *api, count);
            check<std::int64_t>(*pg, *api, count);
        }
        std::printf("rank %d/%d backend=%s: %d failures\n", pg->rank(), pg->size(),
                    pg->backend_name().c_str(), failures);
    } catch (const std::exception& e) {
        std::printf("nccl_check: %s\n", e.what());
        return 1;
    }
    return failures == 0 ? 0 : 1;
}
