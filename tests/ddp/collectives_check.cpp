// A worker for ptrun that checks every collective of ptrun::ddp, for every dtype and op, against
// values computed locally. Modes:
//   collectives_check all [backend [shm_copy]]  every collective x dtype x op x size; exit 0 if
//                                            right (shm_copy: InitOptions::shm_copy, auto)
//   collectives_check die VICTIM OUT_DIR     VICTIM SIGKILLs itself inside an allreduce; others
//                                            record the error in OUT_DIR/rank<R> and exit 3
//   collectives_check hang VICTIM OUT_DIR    VICTIM never joins the allreduce; others time out
// Timeout for die/hang: PTRUN_DDP_TEST_TIMEOUT_MS (default 3000); their InitOptions::shm_copy:
// PTRUN_DDP_TEST_SHM_COPY (default auto).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/init.hpp"

using namespace ptrun::ddp;

namespace {

int failures = 0;
int checks = 0;

template <class T>
T value(int rank, std::size_t i) {
    return static_cast<T>(
        static_cast<long long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 29) - 10);
}

template <class T>
T expected_reduce(int world, std::size_t i, ReduceOp op) {
    T acc = value<T>(0, i);
    for (int r = 1; r < world; ++r) {
        const T v = value<T>(r, i);
        switch (op) {
            case ReduceOp::Sum:
            case ReduceOp::Avg:
                acc = static_cast<T>(acc + v);
                break;
            case ReduceOp::Min:
                acc = v < acc ? v : acc;
                break;
            case ReduceOp::Max:
                acc = acc < v ? v : acc;
                break;
        }
    }
    if (op == ReduceOp::Avg) acc = static_cast<T>(acc / static_cast<T>(world));
    return acc;
}

template <class T>
void expect(bool ok, const char* what, std::size_t count, std::size_t i, T got, T want) {
    ++checks;
    if (!ok) {
        ++failures;
        if (failures < 20) {
            std::fprintf(stderr, "MISMATCH %s %s count=%zu at %zu: got %g want %g\n", what,
                         std::string(dtype_name(dtype_of<T>())).c_str(), count, i,
                         static_cast<double>(got), static_cast<double>(want));
        }
    }
}

template <class T>
void check_type(ProcessGroup& pg, const std::vector<std::size_t>& sizes) {
    const int n = pg.size();
    const int me = pg.rank();
    constexpr DType dt = dtype_of<T>();
    for (std::size_t count : sizes) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
            std::vector<T> buf(count);
            for (std::size_t i = 0; i < count; ++i) buf[i] = value<T>(me, i);
            pg.allreduce(buf.data(), count, dt, op)->wait();
            for (std::size_t i = 0; i < count; ++i) {
                const T want = expected_reduce<T>(n, i, op);
                expect(buf[i] == want, "allreduce", count, i, buf[i], want);
                if (buf[i] != want) break;
            }
            // reduce_scatter: rank r's input is value(r, j) over n * count elements.
            std::vector<T> in(count * static_cast<std::size_t>(n)), out(count);
            for (std::size_t j = 0; j < in.size(); ++j) in[j] = value<T>(me, j);
            pg.reduce_scatter(in.data(), out.data(), count, dt, op)->wait();
            for (std::size_t i = 0; i < count; ++i) {
                const T want = expected_reduce<T>(n, static_cast<std::size_t>(me) * count + i, op);
                expect(out[i] == want, "reduce_scatter", count, i, out[i], want);
                if (out[i] != want) break;
            }
        }
        for (int root = 0; root < n; ++root) {
            std::vector<T> buf(count);
            for (std::size_t i = 0; i < count; ++i) buf[i] = value<T>(me, i);
            pg.broadcast(buf.data(), count, dt, root)->wait();
            for (std::size_t i = 0; i < count; ++i) {
                expect(buf[i] == value<T>(root, i), "broadcast", count, i, buf[i],
                       value<T>(root, i));
                if (buf[i] != value<T>(root, i)) break;
            }
        }
        std::vector<T> in(count), out(count * static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < count; ++i) in[i] = value<T>(me, i);
        pg.allgather(in.data(), out.data(), count, dt)->wait();
        for (int r = 0; r < n; ++r) {
            for (std::size_t i = 0; i < count; ++i) {
                const T got = out[static_cast<std::size_t>(r) * count + i];
                expect(got == value<T>(r, i), "allgather", count, i, got, value<T>(r, i));
                if (got != value<T>(r, i)) break;
            }
        }
        pg.barrier()->wait();
    }
}

int run_all(const std::string& backend, const std::string& shm_copy) {
    InitOptions options;
    options.backend = parse_backend(backend);
    options.shm_copy = parse_shm_copy(shm_copy);
    options.timeout = std::chrono::seconds(60);
    auto pg = init_process_group_from_environment(options);
    // Sizes straddle the one-shot limit, odd splits and several pipeline chunks.
    const std::vector<std::size_t> sizes{0, 1, 3, 1000, 4099, 300'007};
    // Several collectives in flight at once, then waited in order.
    {
        std::vector<std::vector<float>> bufs(4, std::vector<float>(5000));
        std::vector<WorkPtr> works;
        for (auto& b : bufs) {
            for (std::size_t i = 0; i < b.size(); ++i) b[i] = value<float>(pg->rank(), i);
            works.push_back(pg->allreduce(b.data(), b.size(), DType::Float32, ReduceOp::Sum));
        }
        for (auto& w : works) w->wait();
        for (auto& b : bufs) {
            for (std::size_t i = 0; i < b.size(); ++i) {
                const float want = expected_reduce<float>(pg->size(), i, ReduceOp::Sum);
                expect(b[i] == want, "allreduce(async)", b.size(), i, b[i], want);
                if (b[i] != want) break;
            }
        }
    }
    check_type<float>(*pg, sizes);
    check_type<double>(*pg, sizes);
    check_type<std::int32_t>(*pg, sizes);
    check_type<std::int64_t>(*pg, sizes);
    std::printf("rank %d/%d backend=%s: %d checks, %d failures\n", pg->rank(), pg->size(),
                pg->backend_name().c_str(), checks, failures);
    return failures == 0 ? 0 : 1;
}

int run_failure(bool die, int victim, const std::string& out_dir) {
    InitOptions options;
    options.backend = Backend::Cpu;
    const char* t = std::getenv("PTRUN_DDP_TEST_TIMEOUT_MS");
    options.timeout = std::chrono::milliseconds(t != nullptr ? std::atoll(t) : 3000);
    if (const char* copy = std::getenv("PTRUN_DDP_TEST_SHM_COPY"))
        options.shm_copy = parse_shm_copy(copy);
    auto pg = init_process_group_from_environment(options);
    ::signal(SIGTERM, SIG_IGN);  // report our own error before ptrun stops the group
    std::vector<float> buf(1 << 20, 1.0f);
    pg->allreduce(buf.data(), buf.size(), DType::Float32, ReduceOp::Sum)->wait();
    if (pg->rank() == victim) {
        if (die) ::raise(SIGKILL);
        ::signal(SIGTERM, SIG_DFL);
        ::pause();  // never joins; ptrun stops it once the others failed
        return 0;
    }
    const auto start = std::chrono::steady_clock::now();
    std::string what = "no error";
    int code = 0;
    try {
        for (int i = 0; i < 1000; ++i) {
            pg->allreduce(buf.data(), buf.size(), DType::Float32, ReduceOp::Sum)->wait();
        }
    } catch (const PeerLost& e) {
        what = std::string("PeerLost: ") + e.what();
        code = 3;
    } catch (const CollectiveTimeout& e) {
        what = std::string("CollectiveTimeout: ") + e.what();
        code = 3;
    } catch (const CollectiveError& e) {
        what = std::string("CollectiveError: ") + e.what();
        code = 4;
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::ofstream(out_dir + "/rank" + std::to_string(pg->rank())) << ms << "\n" << what << "\n";
    std::fprintf(stderr, "rank %d: %s after %lld ms\n", pg->rank(), what.c_str(),
                 static_cast<long long>(ms));
    std::_Exit(code);  // skip the group's teardown: its peers are gone
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    try {
        if (mode == "all") return run_all(argc > 2 ? argv[2] : "cpu", argc > 3 ? argv[3] : "auto");
        if ((mode == "die" || mode == "hang") && argc > 3) {
            return run_failure(mode == "die", std::atoi(argv[2]), argv[3]);
        }
        std::fprintf(
            stderr,
            "usage: collectives_check all [backend [shm_copy]] | die|hang VICTIM OUT_DIR\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "collectives_check: %s\n", e.what());
        return 1;
    }
}
