#include "reduce_kernels.hpp"

#include <cstdint>
#include <cstring>

// The kernels run at memory speed only when vectorised wide: each public entry point is built
// for baseline x86-64, x86-64-v3 (AVX2) and x86-64-v4 (AVX-512), picked once at load time by
// the CPU (an ifunc), with everything it calls inlined into each clone. The file is built at -O3
// (ddp/CMakeLists.txt): GCC's -O2 cost model declines loops that need runtime alias checks.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PTRUN_REDUCE_KERNEL \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"), flatten))
#else
#define PTRUN_REDUCE_KERNEL
#endif

namespace ptrun::ddp::detail {
namespace {

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
            apply2<T>(out, a, b, count, [](T x, T y) { return static_cast<T>(x + y); });
            return;
        case ReduceOp::Min:
            apply2<T>(out, a, b, count, [](T x, T y) { return y < x ? y : x; });
            return;
        case ReduceOp::Max:
            apply2<T>(out, a, b, count, [](T x, T y) { return x < y ? y : x; });
            return;
    }
}

template <class T, class F>
void apply2_dual(void* out, void* out2, const void* a, const void* b, std::size_t count, F f) {
    auto* o = static_cast<T*>(out);
    auto* o2 = static_cast<T*>(out2);
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    for (std::size_t i = 0; i < count; ++i) {
        const T v = f(x[i], y[i]);
        o[i] = v;
        o2[i] = v;
    }
}

template <class T>
void reduce_dual_typed(ReduceOp op, void* out, void* out2, const void* const* srcs, int nsrc,
                       std::size_t count, int avg_divisor) {
    // Passes 1 .. nsrc-2 accumulate into `out`; the last one stores to both outputs.
    const void* acc = srcs[0];
    for (int s = 1; s < nsrc - 1; ++s) {
        reduce2_typed<T>(op, out, acc, srcs[s], count);
        acc = out;
    }
    const void* last = srcs[nsrc - 1];
    const auto d = static_cast<T>(avg_divisor);
    switch (op) {
        case ReduceOp::Sum:
            apply2_dual<T>(out, out2, acc, last, count, [](T x, T y) { return static_cast<T>(x + y); });
            return;
        case ReduceOp::Avg:
            apply2_dual<T>(out, out2, acc, last, count,
                           [d](T x, T y) { return static_cast<T>(static_cast<T>(x + y) / d); });
            return;
        case ReduceOp::Min:
            apply2_dual<T>(out, out2, acc, last, count, [](T x, T y) { return y < x ? y : x; });
            return;
        case ReduceOp::Max:
            apply2_dual<T>(out, out2, acc, last, count, [](T x, T y) { return x < y ? y : x; });
            return;
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
        case DType::Float32: return reduce2_typed<float>(op, out, a, b, count);
        case DType::Float64: return reduce2_typed<double>(op, out, a, b, count);
        case DType::Int32: return reduce2_typed<std::int32_t>(op, out, a, b, count);
        case DType::Int64: return reduce2_typed<std::int64_t>(op, out, a, b, count);
    }
}

PTRUN_REDUCE_KERNEL void reduce_n_dual(DType dtype, ReduceOp op, void* out, void* out2,
                                       const void* const* srcs, int nsrc, std::size_t count,
                                       int avg_divisor) {
    if (count == 0) return;
    switch (dtype) {
        case DType::Float32:
            return reduce_dual_typed<float>(op, out, out2, srcs, nsrc, count, avg_divisor);
        case DType::Float64:
            return reduce_dual_typed<double>(op, out, out2, srcs, nsrc, count, avg_divisor);
        case DType::Int32:
            return reduce_dual_typed<std::int32_t>(op, out, out2, srcs, nsrc, count, avg_divisor);
        case DType::Int64:
            return reduce_dual_typed<std::int64_t>(op, out, out2, srcs, nsrc, count, avg_divisor);
    }
}

PTRUN_REDUCE_KERNEL void finish_avg(DType dtype, void* data, std::size_t count, int divisor) {
    switch (dtype) {
        case DType::Float32: return divide_typed<float>(data, count, divisor);
        case DType::Float64: return divide_typed<double>(data, count, divisor);
        case DType::Int32: return divide_typed<std::int32_t>(data, count, divisor);
        case DType::Int64: return divide_typed<std::int64_t>(data, count, divisor);
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

}  // namespace ptrun::ddp::detail
