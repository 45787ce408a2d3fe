#pragma once
/// Element-wise reduction kernels on raw buffers (the arithmetic of every CPU collective).

#include <cstddef>

#include "ptrun/ddp/types.hpp"

namespace ptrun::ddp::detail {

/// out[i] = a[i] op b[i] for i < count; Avg combines as Sum (see finish_avg). out may alias a or b.
void reduce2(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count);

/// out[i] = srcs[0][i] op srcs[1][i] op ... (left to right, so every rank gets the same bits);
/// then, for Avg, divides by `avg_divisor`. nsrc >= 1; out may alias srcs[0] only.
void reduce_n(DType dtype, ReduceOp op, void* out, const void* const* srcs, int nsrc,
              std::size_t count, int avg_divisor);

/// reduce_n whose last pass stores every result twice, to `out` and to `out2` (the shm slot and
/// the user buffer in one sweep). `out` must not alias a source; `out2` may be one of them (each
/// element is read before it is written). nsrc >= 2.
void reduce_n_dual(DType dtype, ReduceOp op, void* out, void* out2, const void* const* srcs,
                   int nsrc, std::size_t count, int avg_divisor);

/// data[i] /= divisor: the last step of Avg. Integers divide truncating toward zero.
void finish_avg(DType dtype, void* data, std::size_t count, int divisor);

}  // namespace ptrun::ddp::detail
