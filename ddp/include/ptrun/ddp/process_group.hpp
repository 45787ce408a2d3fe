#pragma once
/// ProcessGroup: the collectives every backend (cpu, nccl) implements.

#include <cstddef>
#include <string>

#include "ptrun/ddp/types.hpp"
#include "ptrun/ddp/work.hpp"

namespace ptrun::ddp {

/// A group of `size()` ranks. Collectives must be issued in the same order on every rank; they
/// complete in issue order. Every call returns at once with a Work; buffers stay owned by the
/// caller and must stay alive until wait(). Counts are elements, not bytes. Argument errors
/// throw CollectiveError at the call. Not thread-safe: issue from one thread.
class ProcessGroup {
  public:
    virtual ~ProcessGroup();
    /// This process's rank in [0, size()).
    virtual int rank() const = 0;
    /// Number of ranks.
    virtual int size() const = 0;
    /// "cpu", "nccl", ...
    virtual std::string backend_name() const = 0;

    /// In place: data[i] = op over ranks of data[i], on every rank.
    virtual WorkPtr allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) = 0;
    /// In place: every rank's data becomes root's.
    virtual WorkPtr broadcast(void* data, std::size_t count, DType dtype, int root) = 0;
    /// out[r * count_per_rank + i] = rank r's in[i]; out holds size() * count_per_rank elements.
    virtual WorkPtr allgather(const void* in, void* out, std::size_t count_per_rank,
                              DType dtype) = 0;
    /// in holds size() * count_per_rank elements; out[i] = op over ranks of in[rank() * cpr + i].
    virtual WorkPtr reduce_scatter(const void* in, void* out, std::size_t count_per_rank,
                                   DType dtype, ReduceOp op) = 0;
    /// Completes once every rank has issued it.
    virtual WorkPtr barrier() = 0;
};

}  // namespace ptrun::ddp
