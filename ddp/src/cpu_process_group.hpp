#pragma once
/// CpuProcessGroup: the "cpu" backend (shared memory within a node, a TCP ring between nodes).

#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "call_timer.hpp"
#include "executor.hpp"
#include "heartbeat_ptr.hpp"
#include "ptrun/ddp/process_group.hpp"
#include "shm_collectives.hpp"
#include "tcp_ring.hpp"

namespace ptrun::ddp::detail {

/// What bootstrap hands the group: this rank's node-local part and, on leaders of a multi-node
/// job, the ring between leaders.
struct CpuGroupParts {
    int rank = 0;
    int size = 1;
    int nodes = 1;
    std::unique_ptr<ShmCollectives> shm;  ///< null when this node has one rank
    std::unique_ptr<TcpRing> ring;        ///< null on one node and on non-leaders
    HeartbeatPtr heartbeat;               ///< beaten by every completed collective (may be null)
};

/// Collectives run on an Executor in issue order; each gets a CallTimer of `timeout` when it
/// starts. Single node: the ShmCollectives directly. Several nodes: allreduce is hierarchical
/// (node reduce over shm, ring between leaders, node broadcast); broadcast, allgather,
/// reduce_scatter and barrier are expressed as allreduces (integer sums over zero-filled
/// buffers are exact bit copies). Each collective that completes beats the worker's heartbeat
/// record, on whichever thread ran it. The first failure breaks the group: it aborts the shared
/// segment and shuts the ring, so every peer fails fast, and later calls fail immediately.
class CpuProcessGroup final : public ProcessGroup {
  public:
    CpuProcessGroup(CpuGroupParts parts, std::chrono::milliseconds timeout);
    /// Drains queued collectives, then releases the segment and sockets.
    ~CpuProcessGroup() override;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string backend_name() const override { return "cpu"; }
    WorkPtr allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) override;
    WorkPtr broadcast(void* data, std::size_t count, DType dtype, int root) override;
    WorkPtr allgather(const void* in, void* out, std::size_t count_per_rank, DType dtype) override;
    WorkPtr reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                           ReduceOp op) override;
    WorkPtr barrier() override;

  private:
    /// Queues `body` on the executor; `bytes` <= kInlineBytes may run inline when it is idle.
    template <class F>
    WorkPtr submit(const char* collective, std::size_t bytes, F body);
    /// The allreduce every multi-node collective is built on (runs on the executor).
    void allreduce_now(void* data, std::size_t count, DType dtype, ReduceOp op,
                       const CallTimer& timer);
    void break_group(std::exception_ptr error);

    int rank_;
    int size_;
    int nodes_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<ShmCollectives> shm_;
    std::unique_ptr<TcpRing> ring_;
    std::exception_ptr broken_;  ///< first failure; touched only by the running operation
    std::vector<char> scratch_;
    std::int32_t barrier_word_ = 0;
    HeartbeatPtr heartbeat_;
    std::shared_ptr<Executor> executor_;
};

}  // namespace ptrun::ddp::detail
