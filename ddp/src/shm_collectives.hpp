#pragma once
/// ShmCollectives: the collectives of one node's local ranks over a shared segment.

#include <cstddef>
#include <functional>
#include <vector>

#include "call_timer.hpp"
#include "ptrun/ddp/types.hpp"
#include "shm_segment.hpp"
#include "shm_sync.hpp"

namespace ptrun::ddp::detail {

/// Data moves through per-rank slots of the segment in chunks, double-buffered, so any message
/// size runs in the preallocated (pre-faulted) slots. Allreduce is a reduce-scatter (each rank
/// reduces its 1/n of a chunk from every slot) then an allgather (each copies the others'
/// reduced parts); small messages use a one-shot variant (one barrier, every rank reduces all).
/// Every rank reduces in rank order, so all ranks get identical bits. Chunks go through a
/// global buffer sequence, so a slot half is rewritten only after a barrier that follows every
/// read of it. All calls block; failures throw as ShmSync describes.
class ShmCollectives {
public:
    /// Stage the node leader runs on each node-reduced chunk (e.g. the inter-node ring).
    using LeaderStage = std::function<void(void* chunk, std::size_t count)>;

    /// `segment` holds local_size slots of `slot_bytes` (two halves of a chunk each).
    ShmCollectives(SharedSegment segment, int local_index, std::vector<int> global_ranks,
                   std::vector<int> pids);

    /// In-place allreduce over the local ranks; Avg divides by `avg_divisor`. With `leader_stage`,
    /// the leader (local index 0) runs it on every node-reduced chunk (op Sum for Avg), then
    /// finishes Avg itself, and every local rank copies the leader's result. The stage may run
    /// `stage_overrun` past the deadline (to learn whom to blame); the ranks waiting for its
    /// result wait that much longer, so that they report the leader's blame, not the leader.
    void allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, int avg_divisor,
                   const CallTimer& timer, const LeaderStage* leader_stage = nullptr,
                   std::chrono::milliseconds stage_overrun = {});
    /// Local rank `root`'s `bytes` at data become every local rank's.
    void broadcast(void* data, std::size_t bytes, int root, const CallTimer& timer);
    /// out[i * bytes_per_rank ...] = local rank i's in.
    void allgather(const void* in, void* out, std::size_t bytes_per_rank, const CallTimer& timer);
    /// out[j] = op over local ranks of in[local_index * count_per_rank + j]; out must not overlap in.
    void reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                        ReduceOp op, int avg_divisor, const CallTimer& timer);
    /// Returns once every local rank called it.
    void barrier(const CallTimer& timer);

    ShmSync& sync() noexcept { return sync_; }
    int local_size() const noexcept { return sync_.local_size(); }
    int local_index() const noexcept { return sync_.local_index(); }
    /// Bytes of one chunk buffer (half a slot).
    std::size_t chunk_bytes() const noexcept { return half_; }

private:
    char* buffer(int index, std::uint64_t seq) const;
    void sync_step(const CallTimer& timer);
    void allreduce_one_shot(char* data, std::size_t count, DType dtype, ReduceOp op,
                            int avg_divisor, const CallTimer& timer);

    SharedSegment segment_;
    ShmSync sync_;
    std::size_t slot_bytes_;
    std::size_t half_;
    std::uint64_t seq_ = 0;  ///< buffer sequence: chunk k of this process uses half (seq % 2)
    std::vector<const void*> srcs_;
};

/// Element range [begin, end) of part `p` of `count` elements split into `parts` near-equal parts.
inline std::size_t part_begin(std::size_t count, int parts, int p) {
    return count * static_cast<std::size_t>(p) / static_cast<std::size_t>(parts);
}

}  // namespace ptrun::ddp::detail
