#include "single_process_group.hpp"

#include <utility>
#include <cstring>

#include "validate.hpp"
#include "work_state.hpp"

namespace ptrun::ddp::detail {

SingleProcessGroup::SingleProcessGroup(std::string backend, HeartbeatPtr heartbeat)
    : backend_(std::move(backend)), heartbeat_(std::move(heartbeat)) {}

WorkPtr SingleProcessGroup::done() {
    beat(heartbeat_);
    return completed_work();
}

WorkPtr SingleProcessGroup::allreduce(void* data, std::size_t count, DType, ReduceOp) {
    check_buffer("allreduce", data, count);
    return done();  // op over one rank is the identity; Avg divides by 1
}

WorkPtr SingleProcessGroup::broadcast(void* data, std::size_t count, DType, int root) {
    check_buffer("broadcast", data, count);
    check_root("broadcast", root, 1);
    return done();
}

WorkPtr SingleProcessGroup::allgather(const void* in, void* out, std::size_t count_per_rank,
                                      DType dtype) {
    check_buffer("allgather", in, count_per_rank);
    check_buffer("allgather", out, count_per_rank);
    if (count_per_rank != 0 && in != out) std::memmove(out, in, count_per_rank * dtype_size(dtype));
    return done();
}

WorkPtr SingleProcessGroup::reduce_scatter(const void* in, void* out, std::size_t count_per_rank,
                                           DType dtype, ReduceOp) {
    check_buffer("reduce_scatter", in, count_per_rank);
    check_buffer("reduce_scatter", out, count_per_rank);
    if (count_per_rank != 0 && in != out) std::memmove(out, in, count_per_rank * dtype_size(dtype));
    return done();
}

WorkPtr SingleProcessGroup::barrier() { return done(); }

}  // namespace ptrun::ddp::detail
