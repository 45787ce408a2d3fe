#include "reduce_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "shared_copy.hpp"

// The kernels run at memory speed only when vectorised wide: each public entry point is built
// for baseline x86-64, x86-64-v3 (AVX2) and x86-64-v4 (AVX-512), picked once at load time by
// the CPU (an ifunc), with everything it calls inlined into each clone. The file is built at -O3
// (ddp/CMakeLists.txt): GCC's -O2 cost model declines loops that need runtime alias checks.
// Under ThreadSanitizer the baseline build alone: the instrumented ifunc resolver would run
// before the TSan runtime exists (a segfault while the dynamic linker relocates the program).
#if defined(__SANITIZE_THREAD__)
#define PTRUN_REDUCE_KERNEL
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PTRUN_REDUCE_KERNEL \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"), flatten))
#else
#define PTRUN_REDUCE_KERNEL
#endif

// The combiners below take 64-byte GCC vectors by value; they are internal and inlined, so the
// warning that such parameters' ABI differs between -mavx512f and not does not concern them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ptrun::ddp::detail {
namespace {

// The combiners of every op (Avg combines as Sum), for scalars and GCC vectors alike.
constexpr auto kSum = [](auto x, auto y) { return x + y; };
constexpr auto kMin = [](auto x, auto y) { return y < x ? y : x; };
constexpr auto kMax = [](auto x, auto y) { return x < y ? y : x; };

// Plain loops over __restrict__-free pointers: out may alias an input, and GCC/Clang vectorise
// these at -O2/-O3 with a runtime overlap check.
template <class T, class F>
void apply2(void* out, const void* a, const void* b, std::size_t count, F f) {
    auto* o = static_cast<T*>(out);
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    for (std::size_t i = 0; i < count; ++i) o[i] = f(x[i], y[i]);
}

template <class T>
void reduce2_typed(ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
    switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Avg:
            return apply2<T>(out, a, b, count, kSum);
        case ReduceOp::Min:
            return apply2<T>(out, a, b, count, kMin);
        case ReduceOp::Max:
            return apply2<T>(out, a, b, count, kMax);
    }
}

/// reduce_n_publish for one type and combiner: a 64-byte line at a time, every source folded
/// (left to right) into one line-wide vector, `finish` applied, the line streamed to `shared_out`
/// (stored, when the whole is not worth_streaming or `stream` is false) and stored to `local_out`.
/// Unaligned head and tail elements go one by one. `f` and `finish` take scalars and GCC vectors
/// alike.
template <class T, class F, class G>
void publish_typed(void* shared_out, void* local_out, const void* const* srcs, int nsrc,
                   std::size_t count, bool stream_ok, F f, G finish) {
    typedef T Line __attribute__((vector_size(64)));
    constexpr std::size_t kLine = sizeof(Line) / sizeof(T);
    auto* shared = static_cast<T*>(shared_out);
    auto* local = static_cast<T*>(local_out);
    const auto src = [srcs](int s) { return static_cast<const T*>(srcs[s]); };
    const auto one = [&](std::size_t i) {
        T v = src(0)[i];
        for (int s = 1; s < nsrc; ++s) v = static_cast<T>(f(v, src(s)[i]));
        v = static_cast<T>(finish(v));
        if (shared != nullptr) shared[i] = v;
        if (local != nullptr) local[i] = v;
    };
    // Whole lines line up with the output that gets them streamed (else with the local one).
    const T* lined_up = shared != nullptr ? shared : local;
    const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(lined_up) % sizeof(Line);
    const bool can_line_up = misaligned % sizeof(T) == 0;
    const std::size_t head = can_line_up && misaligned != 0
                                 ? std::min(count, (sizeof(Line) - misaligned) / sizeof(T))
                                 : 0;
    const bool stream =
        shared != nullptr && can_line_up && stream_ok && worth_streaming(count * sizeof(T));
    std::size_t i = 0;
    for (; i < head; ++i) one(i);
    for (; i + kLine <= count; i += kLine) {
        Line line;
        std::memcpy(&line, src(0) + i, sizeof line);
        for (int s = 1; s < nsrc; ++s) {
            Line next;
            std::memcpy(&next, src(s) + i, sizeof next);
            line = f(line, next);
        }
        line = finish(line);
        if (stream) {
            stream_line(shared + i, &line);
        } else if (shared != nullptr) {
            std::memcpy(shared + i, &line, sizeof line);
        }
        if (local != nullptr) std::memcpy(local + i, &line, sizeof line);
    }
    for (; i < count; ++i) one(i);
    shared_store_fence();
}

template <class T>
void publish_op(ReduceOp op, void* shared_out, void* local_out, const void* const* srcs, int nsrc,
                std::size_t count, int avg_divisor, bool stream) {
    const auto keep = [](auto v) { return v; };
    const auto run = [&](auto f, auto finish) {
        publish_typed<T>(shared_out, local_out, srcs, nsrc, count, stream, f, finish);
    };
    switch (op) {
        case ReduceOp::Sum:
            return run(kSum, keep);
        case ReduceOp::Avg: {
            const auto d = static_cast<T>(avg_divisor);
            return run(kSum, [d](auto v) { return v / d; });
        }
        case ReduceOp::Min:
            return run(kMin, keep);
        case ReduceOp::Max:
            return run(kMax, keep);
    }
}

template <class T>
void divide_typed(void* data, std::size_t count, int divisor) {
    auto* p = static_cast<T*>(data);
    const auto d = static_cast<T>(divisor);
    for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / d);
}

}  // namespace

PTRUN_REDUCE_KERNEL void reduce2(DType dtype, ReduceOp op, void* out, const void* a, const void* b,
                                 std::size_t count) {
    switch (dtype) {
        case DType::Float32:
            return reduce2_typed<float>(op, out, a, b, count);
        case DType::Float64:
            return reduce2_typed<double>(op, out, a, b, count);
        case DType::Int32:
            return reduce2_typed<std::int32_t>(op, out, a, b, count);
        case DType::Int64:
            return reduce2_typed<std::int64_t>(op, out, a, b, count);
    }
}

PTRUN_REDUCE_KERNEL void finish_avg(DType dtype, void* data, std::size_t count, int divisor) {
    switch (dtype) {
        case DType::Float32:
            return divide_typed<float>(data, count, divisor);
        case DType::Float64:
            return divide_typed<double>(data, count, divisor);
        case DType::Int32:
            return divide_typed<std::int32_t>(data, count, divisor);
        case DType::Int64:
            return divide_typed<std::int64_t>(data, count, divisor);
    }
}

PTRUN_REDUCE_KERNEL void reduce_n(DType dtype, ReduceOp op, void* out, const void* const* srcs,
                                  int nsrc, std::size_t count, int avg_divisor) {
    if (count == 0) return;
    if (nsrc == 1) {
        if (out != srcs[0]) std::memcpy(out, srcs[0], count * dtype_size(dtype));
    } else {
        reduce2(dtype, op, out, srcs[0], srcs[1], count);
        for (int s = 2; s < nsrc; ++s) reduce2(dtype, op, out, out, srcs[s], count);
    }
    if (op == ReduceOp::Avg && avg_divisor > 1) finish_avg(dtype, out, count, avg_divisor);
}

PTRUN_REDUCE_KERNEL void reduce_n_publish(DType dtype, ReduceOp op, void* shared_out,
                                          void* local_out, const void* const* srcs, int nsrc,
                                          std::size_t count, int avg_divisor, bool stream) {
    if (count == 0) return;
    switch (dtype) {
        case DType::Float32:
            return publish_op<float>(op, shared_out, local_out, srcs, nsrc, count, avg_divisor,
                                     stream);
        case DType::Float64:
            return publish_op<double>(op, shared_out, local_out, srcs, nsrc, count, avg_divisor,
                                      stream);
        case DType::Int32:
            return publish_op<std::int32_t>(op, shared_out, local_out, srcs, nsrc, count,
                                            avg_divisor, stream);
        case DType::Int64:
            return publish_op<std::int64_t>(op, shared_out, local_out, srcs, nsrc, count,
                                            avg_divisor, stream);
    }
}

}  // namespace ptrun::ddp::detail
