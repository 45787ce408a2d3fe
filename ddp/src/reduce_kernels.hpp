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

/// reduce_n whose result goes to `shared_out` as copy_to_shared(..., stream) writes (for another
/// core to read) and, unless null, to `local_out` too, in one pass a 64-byte line at a time.
/// `shared_out` must not alias a source; `local_out` may be any source. Either output may be
/// null (not both): with `shared_out` null this is reduce_n into any of its sources. nsrc >= 1.
void reduce_n_publish(DType dtype, ReduceOp op, void* shared_out, void* local_out,
                      const void* const* srcs, int nsrc, std::size_t count, int avg_divisor,
                      bool stream = true);

/// data[i] /= divisor: the last step of Avg. Integers divide truncating toward zero.
void finish_avg(DType dtype, void* data, std::size_t count, int divisor);

}  // namespace ptrun::ddp::detail
