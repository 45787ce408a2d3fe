#include "cpu_process_group.hpp"

#include <cstring>

#include "ptrun/ddp/errors.hpp"
#include "reduce_kernels.hpp"
#include "validate.hpp"

namespace ptrun::ddp::detail {
namespace {

std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

/// Collectives up to this many bytes run in the caller when the group is idle (no hand-off):
/// at most ~60 us of work here, less than what waking the progress thread costs when the ranks
/// share the cores (2 ranks, 1 MiB: 11-17 GB/s handed off, 19 GB/s inline).
constexpr std::size_t kInlineBytes = 1024 * 1024;

}  // namespace

CpuProcessGroup::CpuProcessGroup(CpuGroupParts parts, std::chrono::milliseconds timeout)
    : rank_(parts.rank),
      size_(parts.size),
      nodes_(parts.nodes),
      timeout_(timeout),
      shm_(std::move(parts.shm)),
      ring_(std::move(parts.ring)),
      heartbeat_(std::move(parts.heartbeat)),
      executor_(Executor::start()) {}

CpuProcessGroup::~CpuProcessGroup() { executor_->stop(); }

void CpuProcessGroup::break_group(std::exception_ptr error) {
    if (!broken_) broken_ = error;
    int culprit = rank_;
    try {
        std::rethrow_exception(error);
    } catch (const PeerLost& e) {
        culprit = e.peer;
    } catch (const CollectiveTimeout& e) {
        if (!e.peers.empty()) culprit = e.peers.front();
    } catch (...) {
    }
    if (shm_) shm_->sync().abort(culprit);
    if (ring_) ring_->abort(culprit, message_of(error));
}

template <class F>
WorkPtr CpuProcessGroup::submit(const char* collective, std::size_t bytes, F body) {
    return executor_->submit(
        [this, collective, body = std::move(body)] {
            if (broken_) {
                throw CollectiveError(std::string(collective) +
                                      ": the process group is unusable after an earlier failure: " +
                                      message_of(broken_));
            }
            const CallTimer timer = CallTimer::start(collective, timeout_);
            try {
                body(timer);
            } catch (...) {
                break_group(std::current_exception());
                throw;
            }
            beat(heartbeat_);
        },
        bytes <= kInlineBytes);
}

void CpuProcessGroup::allreduce_now(void* data, std::size_t count, DType dtype, ReduceOp op,
                                    const CallTimer& timer) {
    if (nodes_ == 1) {
        if (shm_) shm_->allreduce(data, count, dtype, op, size_, timer);
        return;
    }
    const ReduceOp ring_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
    if (!shm_) {
        ring_->allreduce(data, count, dtype, ring_op, timer);
        if (op == ReduceOp::Avg) finish_avg(dtype, data, count, size_);
        return;
    }
    const ShmCollectives::LeaderStage stage = [&](void* chunk, std::size_t len) {
        ring_->allreduce(chunk, len, dtype, ring_op, timer);
    };
    shm_->allreduce(data, count, dtype, op, size_, timer, &stage, TcpRing::kMaxOverrun);
}

WorkPtr CpuProcessGroup::allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) {
    check_buffer("allreduce", data, count);
    return submit("allreduce", count * dtype_size(dtype), [=, this](const CallTimer& timer) {
        allreduce_now(data, count, dtype, op, timer);
    });
}

WorkPtr CpuProcessGroup::broadcast(void* data, std::size_t count, DType dtype, int root) {
    check_buffer("broadcast", data, count);
    check_root("broadcast", root, size_);
    return submit("broadcast", count * dtype_size(dtype), [=, this](const CallTimer& timer) {
        const std::size_t bytes = count * dtype_size(dtype);
        if (nodes_ == 1) {
            if (shm_) shm_->broadcast(data, bytes, root, timer);
            return;
        }
        if (rank_ != root && bytes != 0) std::memset(data, 0, bytes);
        allreduce_now(data, bytes / 4, DType::Int32, ReduceOp::Sum, timer);
    });
}

WorkPtr CpuProcessGroup::allgather(const void* in, void* out, std::size_t count_per_rank,
                                   DType dtype) {
    check_buffer("allgather", in, count_per_rank);
    check_buffer("allgather", out, count_per_rank);
    const std::size_t total = count_per_rank * dtype_size(dtype) * static_cast<std::size_t>(size_);
    return submit("allgather", total, [=, this](const CallTimer& timer) {
        const std::size_t bytes = count_per_rank * dtype_size(dtype);
        if (nodes_ == 1) {
            if (shm_) {
                shm_->allgather(in, out, bytes, timer);
            } else if (in != out && bytes != 0) {
                std::memmove(out, in, bytes);
            }
            return;
        }
        auto* o = static_cast<char*>(out);
        const std::size_t mine = static_cast<std::size_t>(rank_) * bytes;
        if (bytes != 0) {
            std::memmove(o + mine, in, bytes);
            std::memset(o, 0, mine);
            std::memset(o + mine + bytes, 0,
                        static_cast<std::size_t>(size_) * bytes - mine - bytes);
        }
        allreduce_now(out, static_cast<std::size_t>(size_) * bytes / 4, DType::Int32, ReduceOp::Sum,
                      timer);
    });
}

WorkPtr CpuProcessGroup::reduce_scatter(const void* in, void* out, std::size_t count_per_rank,
                                        DType dtype, ReduceOp op) {
    check_buffer("reduce_scatter", in, count_per_rank);
    check_buffer("reduce_scatter", out, count_per_rank);
    const std::size_t total = count_per_rank * dtype_size(dtype) * static_cast<std::size_t>(size_);
    return submit("reduce_scatter", total, [=, this](const CallTimer& timer) {
        const std::size_t esz = dtype_size(dtype);
        const std::size_t bytes = count_per_rank * esz;
        if (nodes_ == 1) {
            if (shm_) {
                shm_->reduce_scatter(in, out, count_per_rank, dtype, op, size_, timer);
            } else if (in != out && bytes != 0) {
                std::memmove(out, in, bytes);
            }
            return;
        }
        scratch_.resize(static_cast<std::size_t>(size_) * bytes);
        if (bytes != 0) std::memcpy(scratch_.data(), in, scratch_.size());
        allreduce_now(scratch_.data(), static_cast<std::size_t>(size_) * count_per_rank, dtype, op,
                      timer);
        if (bytes != 0) {
            std::memcpy(out, scratch_.data() + static_cast<std::size_t>(rank_) * bytes, bytes);
        }
    });
}

WorkPtr CpuProcessGroup::barrier() {
    return submit("barrier", 0, [this](const CallTimer& timer) {
        if (nodes_ == 1) {
            if (shm_) shm_->barrier(timer);
            return;
        }
        barrier_word_ = 0;
        allreduce_now(&barrier_word_, 1, DType::Int32, ReduceOp::Sum, timer);
    });
}

}  // namespace ptrun::ddp::detail
