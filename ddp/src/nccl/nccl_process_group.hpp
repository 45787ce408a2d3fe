#pragma once
/// NcclProcessGroup: the "nccl" backend over a runtime-loaded libnccl.so.2.

#include <chrono>
#include <memory>

#include "../generation_watch.hpp"
#include "../heartbeat_ptr.hpp"
#include "nccl_api.hpp"
#include "ptrun/ddp/init.hpp"
#include "ptrun/ddp/process_group.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::ddp::detail::nccl {

/// Buffers are CUDA device memory (or memory NCCL accepts). Each collective is enqueued at once
/// on the group's stream; its Work records an event and wait() polls it together with
/// ncclCommGetAsyncError, aborting the communicator and throwing CollectiveTimeout after the
/// timeout. Avg maps to ncclAvg (integer types: sum then truncating division, as the cpu backend).
/// Under recovery in place (RunContext::recovery) a GenerationWatch stands in for the peer's
/// death NCCL cannot see: once the launcher begins the next generation, a wait() aborts the
/// communicator and throws CollectiveError at once instead of waiting out the timeout.
class NcclProcessGroup final : public ProcessGroup {
  public:
    /// Rank 0 creates the unique id and publishes it in `store` (nullptr for world size 1);
    /// selects device options.device, or local_rank when -1. A collective whose Work is seen
    /// complete (wait() or completed()) beats `heartbeat`. Throws CollectiveError.
    NcclProcessGroup(const Api& api, const RunContext& context, const InitOptions& options,
                     rdzv::Store* store, HeartbeatPtr heartbeat = {});
    ~NcclProcessGroup() override;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string backend_name() const override { return "nccl"; }
    WorkPtr allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) override;
    WorkPtr broadcast(void* data, std::size_t count, DType dtype, int root) override;
    WorkPtr allgather(const void* in, void* out, std::size_t count_per_rank, DType dtype) override;
    WorkPtr reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                           ReduceOp op) override;
    WorkPtr barrier() override;

  private:
    WorkPtr finish(const char* collective, ncclResult_t enqueued);

    const Api& api_;
    int rank_;
    int size_;
    std::chrono::milliseconds timeout_;
    ncclComm_t comm_ = nullptr;
    cudaStream_t stream_ = nullptr;
    void* barrier_buf_ = nullptr;
    std::shared_ptr<bool> aborted_;
    HeartbeatPtr heartbeat_;
    std::shared_ptr<const GenerationWatch> watch_;  ///< null without recovery in place
};

/// Whether "auto" should pick nccl: the libraries load and a device exists.
bool available();

}  // namespace ptrun::ddp::detail::nccl
