#pragma once
/// The world-size-1 group: every collective is a local copy (or nothing), complete at once.

#include "heartbeat_ptr.hpp"
#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp::detail {

/// Rank 0 of 1; needs no store, no threads, no shared memory.
class SingleProcessGroup final : public ProcessGroup {
  public:
    /// `backend` is what backend_name() reports ("cpu"); every collective beats `heartbeat`.
    explicit SingleProcessGroup(std::string backend = "cpu", HeartbeatPtr heartbeat = {});

    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string backend_name() const override { return backend_; }
    WorkPtr allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) override;
    WorkPtr broadcast(void* data, std::size_t count, DType dtype, int root) override;
    WorkPtr allgather(const void* in, void* out, std::size_t count_per_rank, DType dtype) override;
    WorkPtr reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                           ReduceOp op) override;
    WorkPtr barrier() override;

  private:
    /// A completed Work, after one beat.
    WorkPtr done();

    std::string backend_;
    HeartbeatPtr heartbeat_;
};

}  // namespace ptrun::ddp::detail
