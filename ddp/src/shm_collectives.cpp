#include "shm_collectives.hpp"

#include <algorithm>
#include <cstring>

#include "ptrun/ddp/errors.hpp"
#include "reduce_kernels.hpp"
#include "shared_copy.hpp"

namespace ptrun::ddp::detail {
namespace {

/// Messages up to this size take the one-shot allreduce (one barrier instead of two).
constexpr std::size_t kOneShotBytes = 16 * 1024;

}  // namespace

ShmCollectives::ShmCollectives(SharedSegment segment, int local_index,
                               std::vector<int> global_ranks, std::vector<int> pids)
    : segment_(std::move(segment)),
      sync_(segment_.data(), local_index, std::move(global_ranks), std::move(pids)) {
    const auto* header = static_cast<const ShmHeader*>(segment_.data());
    slot_bytes_ = header->slot_bytes;
    half_ = slot_bytes_ / 2;
    srcs_.resize(static_cast<std::size_t>(sync_.local_size()));
}

char* ShmCollectives::buffer(int index, std::uint64_t seq) const {
    return static_cast<char*>(segment_.data()) +
           slot_offset(sync_.local_size(), index, slot_bytes_) + (seq % 2) * half_;
}

void ShmCollectives::sync_step(const CallTimer& timer) {
    sync_.sync(timer.collective, timer.deadline, timer.timeout);
}

void ShmCollectives::barrier(const CallTimer& timer) { sync_step(timer); }

void ShmCollectives::allreduce_one_shot(char* data, std::size_t count, DType dtype, ReduceOp op,
                                        int avg_divisor, const CallTimer& timer) {
    const int n = local_size();
    const int me = local_index();
    const std::size_t bytes = count * dtype_size(dtype);
    const std::uint64_t seq = seq_++;
    copy_to_shared(buffer(me, seq), data, bytes);
    sync_step(timer);
    for (int p = 0; p < n; ++p) srcs_[static_cast<std::size_t>(p)] = buffer(p, seq);
    reduce_n(dtype, op, data, srcs_.data(), n, count, avg_divisor);
}

void ShmCollectives::allreduce(void* data_ptr, std::size_t count, DType dtype, ReduceOp op,
                               int avg_divisor, const CallTimer& timer,
                               const LeaderStage* leader_stage,
                               std::chrono::milliseconds stage_overrun) {
    auto* data = static_cast<char*>(data_ptr);
    const std::size_t esz = dtype_size(dtype);
    const int n = local_size();
    const int me = local_index();
    if (count == 0) return;
    if (leader_stage == nullptr && count * esz <= std::min(kOneShotBytes, half_)) {
        allreduce_one_shot(data, count, dtype, op, avg_divisor, timer);
        return;
    }
    // With a leader stage the local reduction is a plain sum and the leader finishes Avg.
    const ReduceOp local_op = (leader_stage != nullptr && op == ReduceOp::Avg) ? ReduceOp::Sum : op;
    const int local_divisor = leader_stage != nullptr ? 1 : avg_divisor;
    const std::size_t chunk_elems = half_ / esz;
    for (std::size_t off = 0; off < count; off += chunk_elems) {
        const std::size_t len = std::min(chunk_elems, count - off);
        const std::uint64_t seq = seq_++;
        char* user = data + off * esz;
        char* mine = buffer(me, seq);
        // 1. write every part but my own into my slot (only I read my own part, from `user`).
        for (int p = 0; p < n; ++p) {
            if (p == me) continue;
            const std::size_t b = part_begin(len, n, p), e = part_begin(len, n, p + 1);
            stream_to_shared(mine + b * esz, user + b * esz, (e - b) * esz);
        }
        shared_store_fence();
        sync_step(timer);
        // 2. reduce my part from every slot, in rank order, into my slot (streamed: the others
        // read it next) and into `user`.
        const std::size_t b = part_begin(len, n, me), e = part_begin(len, n, me + 1);
        for (int p = 0; p < n; ++p) {
            srcs_[static_cast<std::size_t>(p)] =
                p == me ? user + b * esz : buffer(p, seq) + b * esz;
        }
        reduce_n_publish(dtype, local_op, mine + b * esz,
                         leader_stage == nullptr ? user + b * esz : nullptr, srcs_.data(), n,
                         e - b, local_divisor);
        sync_step(timer);
        if (leader_stage == nullptr) {
            // 3. copy the other ranks' reduced parts.
            for (int p = 0; p < n; ++p) {
                if (p == me) continue;
                const std::size_t pb = part_begin(len, n, p), pe = part_begin(len, n, p + 1);
                std::memcpy(user + pb * esz, buffer(p, seq) + pb * esz, (pe - pb) * esz);
            }
            continue;
        }
        // Hierarchical: the leader assembles the node's chunk in its slot, runs the stage on it.
        char* lead = buffer(0, seq);
        if (me == 0) {
            for (int p = 1; p < n; ++p) {
                const std::size_t pb = part_begin(len, n, p), pe = part_begin(len, n, p + 1);
                stream_to_shared(lead + pb * esz, buffer(p, seq) + pb * esz, (pe - pb) * esz);
            }
            shared_store_fence();
            (*leader_stage)(lead, len);
            if (op == ReduceOp::Avg) finish_avg(dtype, lead, len, avg_divisor);
        }
        sync_.sync(timer.collective, timer.deadline + stage_overrun, timer.timeout);
        std::memcpy(user, lead, len * esz);
    }
}

void ShmCollectives::broadcast(void* data_ptr, std::size_t bytes, int root,
                               const CallTimer& timer) {
    auto* data = static_cast<char*>(data_ptr);
    const int me = local_index();
    for (std::size_t off = 0; off < bytes; off += half_) {
        const std::size_t len = std::min(half_, bytes - off);
        const std::uint64_t seq = seq_++;
        if (me == root) copy_to_shared(buffer(root, seq), data + off, len);
        sync_step(timer);
        if (me != root) std::memcpy(data + off, buffer(root, seq), len);
    }
}

void ShmCollectives::allgather(const void* in_ptr, void* out_ptr, std::size_t bytes_per_rank,
                               const CallTimer& timer) {
    const auto* in = static_cast<const char*>(in_ptr);
    auto* out = static_cast<char*>(out_ptr);
    const int n = local_size();
    const int me = local_index();
    for (std::size_t off = 0; off < bytes_per_rank; off += half_) {
        const std::size_t len = std::min(half_, bytes_per_rank - off);
        const std::uint64_t seq = seq_++;
        copy_to_shared(buffer(me, seq), in + off, len);
        sync_step(timer);
        for (int p = 0; p < n; ++p) {
            char* dst = out + static_cast<std::size_t>(p) * bytes_per_rank + off;
            std::memcpy(dst, p == me ? in + off : buffer(p, seq), len);
        }
    }
}

void ShmCollectives::reduce_scatter(const void* in_ptr, void* out_ptr, std::size_t count_per_rank,
                                    DType dtype, ReduceOp op, int avg_divisor,
                                    const CallTimer& timer) {
    const auto* in = static_cast<const char*>(in_ptr);
    auto* out = static_cast<char*>(out_ptr);
    const std::size_t esz = dtype_size(dtype);
    const int n = local_size();
    const int me = local_index();
    const std::size_t chunk_elems = half_ / (esz * static_cast<std::size_t>(n));
    const std::size_t cpr_bytes = count_per_rank * esz;
    for (std::size_t off = 0; off < count_per_rank; off += chunk_elems) {
        const std::size_t len = std::min(chunk_elems, count_per_rank - off);
        const std::uint64_t seq = seq_++;
        char* mine = buffer(me, seq);
        // My slot holds, for every other rank p, my contribution to p's part (len elements).
        for (int p = 0; p < n; ++p) {
            if (p == me) continue;
            stream_to_shared(mine + static_cast<std::size_t>(p) * len * esz,
                             in + static_cast<std::size_t>(p) * cpr_bytes + off * esz, len * esz);
        }
        shared_store_fence();
        sync_step(timer);
        for (int p = 0; p < n; ++p) {
            srcs_[static_cast<std::size_t>(p)] =
                p == me ? in + static_cast<std::size_t>(me) * cpr_bytes + off * esz
                        : buffer(p, seq) + static_cast<std::size_t>(me) * len * esz;
        }
        reduce_n(dtype, op, out + off * esz, srcs_.data(), n, len, avg_divisor);
    }
}

}  // namespace ptrun::ddp::detail
