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
      sync_(segment_.data(), local_index, global_ranks, pids),
      peers_(std::move(pids), std::move(global_ranks)),
      tuner_(&board(0), sync_.local_size(), local_index),
      probe_word_(kShmMagic),
      piece_bytes_(piece_bytes(sync_.local_size())) {
    const auto* header = static_cast<const ShmHeader*>(segment_.data());
    slot_bytes_ = header->slot_bytes;
    half_ = slot_bytes_ / 2;
    copy_mode_ = header->copy_mode;
    if (copy_mode_ > static_cast<std::uint32_t>(kCopyStrategies)) {
        throw CollectiveError("shared memory segment '" + segment_.name() +
                              "' names an unknown copy mode " + std::to_string(copy_mode_));
    }
    srcs_.resize(static_cast<std::size_t>(sync_.local_size()));
    if (copy_mode_ != 0) tuner_.set_candidates(1U << (copy_mode_ - 1));
    board(local_index)
        .probe.store(reinterpret_cast<std::uintptr_t>(&probe_word_), std::memory_order_relaxed);
}

std::size_t ShmCollectives::piece_bytes(int local_size) {
    const std::size_t peers = static_cast<std::size_t>(std::max(1, local_size - 1));
    const std::size_t piece = std::clamp(kPulledBytes / peers, kMinPieceBytes, kPieceBytes);
    return piece / 4096 * 4096;
}

char* ShmCollectives::buffer(int index, std::uint64_t seq) const {
    return static_cast<char*>(segment_.data()) +
           slot_offset(sync_.local_size(), index, slot_bytes_) + (seq % 2) * half_;
}

RankBoard& ShmCollectives::board(int index) const {
    return *reinterpret_cast<RankBoard*>(static_cast<char*>(segment_.data()) +
                                         board_offset(sync_.local_size(), index));
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

void ShmCollectives::check_reach(const CallTimer& timer) {
    reach_checked_ = true;
    const int n = local_size();
    const int me = local_index();
    const bool wanted =
        copy_mode_ == 0 || copy_mode_ == 1 + static_cast<std::uint32_t>(CopyStrategy::SingleCopy);
    if (!wanted) return;
    sync_step(timer);  // every rank has published its probe word's address
    std::string why;
    bool ok = true;
    for (int p = 0; p < n && ok; ++p) {
        if (p != me) {
            ok = peers_.reachable(p, board(p).probe.load(std::memory_order_relaxed), kShmMagic,
                                  &why);
        }
    }
    board(me).reach.store(ok ? 1 : 2, std::memory_order_relaxed);
    sync_step(timer);
    int refused = -1;
    for (int p = 0; p < n && refused < 0; ++p) {
        if (board(p).reach.load(std::memory_order_relaxed) != 1) refused = p;
    }
    if (refused < 0) {  // fault the pieces' pages in now, not in the first timed trial
        pulled_.assign(static_cast<std::size_t>(n) * piece_bytes_, 0);
    }
    if (copy_mode_ == 0) {
        unsigned mask = (1U << static_cast<int>(CopyStrategy::Streamed)) |
                        (1U << static_cast<int>(CopyStrategy::Plain));
        if (refused < 0) mask |= 1U << static_cast<int>(CopyStrategy::SingleCopy);
        tuner_.set_candidates(mask);
    } else if (refused >= 0) {
        throw CollectiveError(
            std::string(timer.collective) + ": shm_copy single-copy is not possible here: " +
            (refused == me
                 ? why
                 : "local rank " + std::to_string(refused) + " cannot read its peers' memory") +
            " (process_vm_readv needs ptrace access to the peer)");
    }
}

void ShmCollectives::allreduce(void* data_ptr, std::size_t count, DType dtype, ReduceOp op,
                               int avg_divisor, const CallTimer& timer,
                               const LeaderStage* leader_stage,
                               std::chrono::milliseconds stage_overrun) {
    auto* data = static_cast<char*>(data_ptr);
    const std::size_t esz = dtype_size(dtype);
    if (count == 0) return;
    if (leader_stage == nullptr && count * esz <= std::min(kOneShotBytes, half_)) {
        allreduce_one_shot(data, count, dtype, op, avg_divisor, timer);
        return;
    }
    if (leader_stage != nullptr) {
        allreduce_slots(data, count, dtype, op, avg_divisor, timer,
                        tuner_.streaming_pays(count * esz), leader_stage, stage_overrun);
        return;
    }
    if (!reach_checked_) check_reach(timer);
    board(local_index())
        .buffer.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_relaxed);
    bool synced = false;         // a barrier since the buffer was published
    bool peers_writing = false;  // single-copy writes into `data` not yet closed by a barrier
    const std::size_t seg_elems = kSegmentBytes / esz;
    for (std::size_t off = 0; off < count; off += seg_elems) {
        const std::size_t len = std::min(seg_elems, count - off);
        StrategyTuner::Plan plan = tuner_.next(len * esz);
        if (plan.agree) {
            sync_step(timer);  // every rank's trial times are on the boards
            plan.strategy = tuner_.agree(plan.size_class);
            synced = true;
            peers_writing = false;
        }
        const bool single = plan.strategy == CopyStrategy::SingleCopy;
        Clock::time_point start;
        if (plan.timed || (single && !synced)) {
            sync_step(timer);
            synced = true;
            peers_writing = false;
            start = Clock::now();
        }
        if (single) {
            allreduce_single_copy(data + off * esz, off * esz, len, dtype, op, avg_divisor, timer);
            peers_writing = true;
        } else {
            allreduce_slots(data + off * esz, len, dtype, op, avg_divisor, timer,
                            plan.strategy == CopyStrategy::Streamed, nullptr, {});
            synced = true;
            peers_writing = false;  // its barriers follow every earlier segment's writes
        }
        if (plan.timed) {
            sync_step(timer);
            peers_writing = false;
            tuner_.record(plan, Clock::now() - start);
        }
    }
    if (peers_writing) sync_step(timer);  // the peers' last writes into `data` are done
}

void ShmCollectives::allreduce_single_copy(char* data, std::size_t offset, std::size_t count,
                                           DType dtype, ReduceOp op, int avg_divisor,
                                           const CallTimer& timer) {
    const std::size_t esz = dtype_size(dtype);
    const int n = local_size();
    const int me = local_index();
    const std::size_t piece_elems = piece_bytes_ / esz;
    // My part of every rank's buffer is mine alone until the closing barrier: I pull it from
    // each peer, reduce it in rank order, store it here and push it back into each peer.
    const std::size_t b = part_begin(count, n, me), e = part_begin(count, n, me + 1);
    for (std::size_t o = b; o < e; o += piece_elems) {
        const std::size_t len = std::min(piece_elems, e - o);
        const std::size_t at = offset + o * esz;
        for (int p = 0; p < n; ++p) {
            char* pulled = pulled_.data() + static_cast<std::size_t>(p) * piece_bytes_;
            if (p != me) {
                peers_.read(p, pulled, board(p).buffer.load(std::memory_order_relaxed) + at,
                            len * esz, timer.collective);
            }
            srcs_[static_cast<std::size_t>(p)] = p == me ? data + o * esz : pulled;
        }
        reduce_n_publish(dtype, op, nullptr, data + o * esz, srcs_.data(), n, len, avg_divisor);
        for (int p = 0; p < n; ++p) {
            if (p != me) {
                peers_.write(p, board(p).buffer.load(std::memory_order_relaxed) + at,
                             data + o * esz, len * esz, timer.collective);
            }
        }
    }
}

void ShmCollectives::allreduce_slots(char* data, std::size_t count, DType dtype, ReduceOp op,
                                     int avg_divisor, const CallTimer& timer, bool stream,
                                     const LeaderStage* leader_stage,
                                     std::chrono::milliseconds stage_overrun) {
    const std::size_t esz = dtype_size(dtype);
    const int n = local_size();
    const int me = local_index();
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
            stream_to_shared(mine + b * esz, user + b * esz, (e - b) * esz, stream);
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
                         leader_stage == nullptr ? user + b * esz : nullptr, srcs_.data(), n, e - b,
                         local_divisor, stream);
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
                stream_to_shared(lead + pb * esz, buffer(p, seq) + pb * esz, (pe - pb) * esz,
                                 stream);
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
    const bool stream = tuner_.streaming_pays(bytes);
    for (std::size_t off = 0; off < bytes; off += half_) {
        const std::size_t len = std::min(half_, bytes - off);
        const std::uint64_t seq = seq_++;
        if (me == root) copy_to_shared(buffer(root, seq), data + off, len, stream);
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
    const bool stream = tuner_.streaming_pays(bytes_per_rank * static_cast<std::size_t>(n));
    for (std::size_t off = 0; off < bytes_per_rank; off += half_) {
        const std::size_t len = std::min(half_, bytes_per_rank - off);
        const std::uint64_t seq = seq_++;
        copy_to_shared(buffer(me, seq), in + off, len, stream);
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
    const bool stream = tuner_.streaming_pays(cpr_bytes * static_cast<std::size_t>(n));
    for (std::size_t off = 0; off < count_per_rank; off += chunk_elems) {
        const std::size_t len = std::min(chunk_elems, count_per_rank - off);
        const std::uint64_t seq = seq_++;
        char* mine = buffer(me, seq);
        // My slot holds, for every other rank p, my contribution to p's part (len elements).
        for (int p = 0; p < n; ++p) {
            if (p == me) continue;
            stream_to_shared(mine + static_cast<std::size_t>(p) * len * esz,
                             in + static_cast<std::size_t>(p) * cpr_bytes + off * esz, len * esz,
                             stream);
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
