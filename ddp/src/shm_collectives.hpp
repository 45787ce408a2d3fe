#pragma once
/// ShmCollectives: the collectives of one node's local ranks over a shared segment.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "call_timer.hpp"
#include "peer_memory.hpp"
#include "ptrun/ddp/types.hpp"
#include "shm_segment.hpp"
#include "shm_sync.hpp"
#include "strategy_tuner.hpp"

namespace ptrun::ddp::detail {

/// Data moves through per-rank slots of the segment in chunks, double-buffered, so any message
/// size runs in the preallocated (pre-faulted) slots. Allreduce is a reduce-scatter (each rank
/// reduces its 1/n of a chunk from every slot) then an allgather (each copies the others'
/// reduced parts); small messages use a one-shot variant (one barrier, every rank reduces all).
/// Larger allreduces go in segments of up to kSegmentBytes, each run with the CopyStrategy the
/// StrategyTuner picked for its size on this machine (slots streamed or plain, or single-copy
/// between the ranks' buffers where the kernel allows it; the header's copy_mode may fix one).
/// Broadcast, allgather, reduce_scatter and the multi-node allreduce go through the slots, with
/// streamed or plain stores as the allreduce's last trials of the same size found faster.
/// Every rank reduces in rank order, so all ranks get identical bits whatever the strategy.
/// Chunks go through a global buffer sequence, so a slot half is rewritten only after a barrier
/// that follows every read of it. All calls block; failures throw as ShmSync describes.
class ShmCollectives {
  public:
    /// Stage the node leader runs on each node-reduced chunk (e.g. the inter-node ring).
    using LeaderStage = std::function<void(void* chunk, std::size_t count)>;

    /// `segment` holds local_size slots of `slot_bytes` (two halves of a chunk each).
    ShmCollectives(SharedSegment segment, int local_index, std::vector<int> global_ranks,
                   std::vector<int> pids);
    ShmCollectives(const ShmCollectives&) = delete;
    ShmCollectives& operator=(const ShmCollectives&) = delete;

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
    /// out[j] = op over local ranks of in[local_index * count_per_rank + j]; out must not overlap
    /// in.
    void reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                        ReduceOp op, int avg_divisor, const CallTimer& timer);
    /// Returns once every local rank called it.
    void barrier(const CallTimer& timer);

    ShmSync& sync() noexcept { return sync_; }
    int local_size() const noexcept { return sync_.local_size(); }
    int local_index() const noexcept { return sync_.local_index(); }
    /// Bytes of one chunk buffer (half a slot).
    std::size_t chunk_bytes() const noexcept { return half_; }
    /// The strategy tuner (for tests and reports).
    const StrategyTuner& tuner() const noexcept { return tuner_; }

    /// Allreduces above this run in segments of at most this many bytes, each tuned on its own.
    static constexpr std::size_t kSegmentBytes = 4 * 1024 * 1024;
    /// Single-copy moves a rank's part in pieces of this many bytes per peer (they stay in cache
    /// between the pull, the reduction and the push), fewer with many peers (piece_bytes()).
    static constexpr std::size_t kPieceBytes = 256 * 1024;
    /// All peers' pieces together stay within this, down to kMinPieceBytes a peer.
    static constexpr std::size_t kPulledBytes = 1024 * 1024;
    static constexpr std::size_t kMinPieceBytes = 32 * 1024;
    /// The single-copy piece for `local_size` ranks (a multiple of 4 KiB).
    static std::size_t piece_bytes(int local_size);

  private:
    char* buffer(int index, std::uint64_t seq) const;
    RankBoard& board(int index) const;
    void sync_step(const CallTimer& timer);
    void allreduce_one_shot(char* data, std::size_t count, DType dtype, ReduceOp op,
                            int avg_divisor, const CallTimer& timer);
    /// The slot allreduce (streamed or plain stores), optionally through the leader's stage.
    void allreduce_slots(char* data, std::size_t count, DType dtype, ReduceOp op, int avg_divisor,
                         const CallTimer& timer, bool stream, const LeaderStage* leader_stage,
                         std::chrono::milliseconds stage_overrun);
    /// Single-copy allreduce of `count` elements at byte `offset` of every rank's published
    /// buffer (`data` + offset here); peers write into `data` until the next barrier.
    void allreduce_single_copy(char* data, std::size_t offset, std::size_t count, DType dtype,
                               ReduceOp op, int avg_divisor, const CallTimer& timer);
    /// Once per group: whether every local rank can reach every other's memory (two barriers);
    /// sets the tuner's candidates accordingly.
    void check_reach(const CallTimer& timer);

    SharedSegment segment_;
    ShmSync sync_;
    PeerMemory peers_;
    std::size_t slot_bytes_;
    std::size_t half_;
    std::uint64_t seq_ = 0;  ///< buffer sequence: chunk k of this process uses half (seq % 2)
    std::vector<const void*> srcs_;
    StrategyTuner tuner_;
    /// 1 + the strategy the header fixes, or 0 (tuned).
    std::uint32_t copy_mode_ = 0;
    bool reach_checked_ = false;
    std::uint64_t probe_word_;  ///< read by peers to check single-copy reach
    std::size_t piece_bytes_;   ///< piece_bytes(local_size)
    std::vector<char> pulled_;  ///< single-copy: one piece from each peer
};

/// Element range [begin, end) of part `p` of `count` elements split into `parts` near-equal parts.
inline std::size_t part_begin(std::size_t count, int parts, int p) {
    return count * static_cast<std::size_t>(p) / static_cast<std::size_t>(parts);
}

}  // namespace ptrun::ddp::detail
