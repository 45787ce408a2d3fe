#include "nccl_process_group.hpp"

#include <cstring>
#include <string>
#include <thread>

#include "../validate.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::ddp::detail::nccl {
namespace {

ncclDataType_t to_nccl(DType d) {
    switch (d) {
        case DType::Float32:
            return ncclFloat32;
        case DType::Float64:
            return ncclFloat64;
        case DType::Int32:
            return ncclInt32;
        case DType::Int64:
            return ncclInt64;
    }
    return ncclFloat32;
}

ncclRedOp_t to_nccl(ReduceOp op) {
    switch (op) {
        case ReduceOp::Sum:
            return ncclSum;
        case ReduceOp::Avg:
            return ncclAvg;
        case ReduceOp::Min:
            return ncclMin;
        case ReduceOp::Max:
            return ncclMax;
    }
    return ncclSum;
}

/// Completion of one enqueued collective: an event on the group's stream.
class NcclWork final : public Work {
  public:
    NcclWork(const Api& api, ncclComm_t comm, cudaEvent_t event, const char* collective,
             std::chrono::milliseconds timeout, std::shared_ptr<bool> aborted,
             HeartbeatPtr heartbeat, std::shared_ptr<const GenerationWatch> watch)
        : api_(api),
          comm_(comm),
          event_(event),
          collective_(collective),
          timeout_(timeout),
          start_(std::chrono::steady_clock::now()),
          aborted_(std::move(aborted)),
          heartbeat_(std::move(heartbeat)),
          watch_(std::move(watch)) {}
    ~NcclWork() override { api_.EventDestroy(event_); }

    bool completed() override {
        if (done_) return true;
        if (replaced()) return true;  // wait() throws
        const cudaError_t q = api_.EventQuery(event_);
        if (q == 0) succeed();
        return q != kCudaErrorNotReady;
    }

    void wait() override {
        auto pause = std::chrono::microseconds(1);
        for (;;) {
            const cudaError_t q = api_.EventQuery(event_);
            if (q == 0) {
                succeed();
                return;
            }
            if (q != kCudaErrorNotReady) {
                throw CollectiveError(std::string(collective_) + ": CUDA error " +
                                      api_.CudaErrorString(q));
            }
            ncclResult_t async = 0;
            if (api_.CommGetAsyncError(comm_, &async) == 0 && async != 0) {
                // NCCL's rule after an asynchronous error: abort, so nothing later (the group's
                // shutdown, a device synchronize) waits on the kernels stuck on the peer.
                if (!*aborted_) api_.CommAbort(comm_);
                *aborted_ = true;
                throw CollectiveError(std::string(collective_) + ": NCCL error " +
                                      api_.GetErrorString(async));
            }
            if (replaced()) {
                if (!*aborted_) api_.CommAbort(comm_);
                *aborted_ = true;
                throw CollectiveError(std::string(collective_) + ": generation " +
                                      std::to_string(watch_->next()) +
                                      " began (a peer was replaced); the communicator was aborted");
            }
            if (*aborted_ || std::chrono::steady_clock::now() - start_ >= timeout_) {
                if (!*aborted_) api_.CommAbort(comm_);
                *aborted_ = true;
                throw CollectiveTimeout(collective_, {}, timeout_);
            }
            std::this_thread::sleep_for(pause);  // GPU completion has no fd to wait on
            pause = std::min(pause * 2, std::chrono::microseconds(500));
        }
    }

  private:
    /// The launcher began the next generation: this group's peers are no longer all there.
    bool replaced() const { return watch_ != nullptr && watch_->next_begun(); }

    /// The collective completed: one beat, the first time only.
    void succeed() {
        if (!done_) beat(heartbeat_);
        done_ = true;
    }

    const Api& api_;
    ncclComm_t comm_;
    cudaEvent_t event_;
    const char* collective_;
    std::chrono::milliseconds timeout_;
    std::chrono::steady_clock::time_point start_;
    std::shared_ptr<bool> aborted_;
    HeartbeatPtr heartbeat_;
    std::shared_ptr<const GenerationWatch> watch_;
    bool done_ = false;
};

void check_cuda(const Api& api, cudaError_t e, const char* what) {
    if (e != 0)
        throw CollectiveError(std::string("nccl backend: ") + what + ": " + api.CudaErrorString(e));
}

void check_nccl(const Api& api, ncclResult_t r, const char* what) {
    if (r != 0)
        throw CollectiveError(std::string("nccl backend: ") + what + ": " + api.GetErrorString(r));
}

}  // namespace

bool available() { return load() != nullptr && device_count() > 0; }

NcclProcessGroup::NcclProcessGroup(const Api& api, const RunContext& ctx,
                                   const InitOptions& options, rdzv::Store* store,
                                   HeartbeatPtr heartbeat)
    : api_(api),
      rank_(ctx.rank),
      size_(ctx.world_size),
      timeout_(options.timeout),
      aborted_(std::make_shared<bool>(false)),
      heartbeat_(std::move(heartbeat)) {
    const int devices = device_count();
    const int device = options.device >= 0 ? options.device : ctx.local_rank;
    if (device >= devices) {
        throw CollectiveError("nccl backend: device " + std::to_string(device) + " requested but " +
                              std::to_string(devices) + " CUDA device(s) visible");
    }
    check_cuda(api_, api_.SetDevice(device), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(api_, api_.GetUniqueId(&id), "ncclGetUniqueId");
    if (size_ > 1) {
        if (rank_ == 0) {
            store->set("nccl_unique_id", std::string_view(id.internal, sizeof id.internal));
        } else {
            const std::string got = store->get("nccl_unique_id", timeout_);
            if (got.size() != sizeof id.internal)
                throw CollectiveError("nccl backend: bad unique id in the store");
            std::memcpy(id.internal, got.data(), sizeof id.internal);
        }
    }
    if (ctx.recovery && size_ > 1) {
        try {
            watch_ = std::make_shared<const GenerationWatch>(ctx.master_addr, ctx.master_port,
                                                             ctx.generation, timeout_);
        } catch (const rdzv::StoreError& e) {
            throw CollectiveError(std::string("nccl backend: watching for the next generation: ") +
                                  e.what());
        }
    }
    check_nccl(api_, api_.CommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    check_cuda(api_, api_.StreamCreate(&stream_), "cudaStreamCreate");
    check_cuda(api_, api_.Malloc(&barrier_buf_, 8), "cudaMalloc");
}

NcclProcessGroup::~NcclProcessGroup() {
    if (comm_ != nullptr && stream_ != nullptr && !*aborted_) {
        // Work nobody waited for may be stuck on a dead peer: give it the timeout, then abort
        // the communicator (NcclWork::wait does), so the synchronize below cannot hang.
        try {
            finish("shutdown", 0)->wait();
        } catch (const CollectiveError&) {
        }
    }
    if (barrier_buf_ != nullptr) {
        api_.DeviceSynchronize();
        api_.Free(barrier_buf_);
    }
    if (stream_ != nullptr) api_.StreamDestroy(stream_);
    if (comm_ != nullptr) (*aborted_ ? api_.CommAbort(comm_) : api_.CommDestroy(comm_));
}

WorkPtr NcclProcessGroup::finish(const char* collective, ncclResult_t enqueued) {
    check_nccl(api_, enqueued, collective);
    cudaEvent_t event = nullptr;
    check_cuda(api_, api_.EventCreate(&event), "cudaEventCreate");
    check_cuda(api_, api_.EventRecord(event, stream_), "cudaEventRecord");
    // The shutdown marker is no collective of the worker's: it does not beat.
    const bool is_collective = std::strcmp(collective, "shutdown") != 0;
    return std::make_shared<NcclWork>(api_, comm_, event, collective, timeout_, aborted_,
                                      is_collective ? heartbeat_ : nullptr, watch_);
}

WorkPtr NcclProcessGroup::allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) {
    check_buffer("allreduce", data, count);
    return finish("allreduce",
                  api_.AllReduce(data, data, count, to_nccl(dtype), to_nccl(op), comm_, stream_));
}

WorkPtr NcclProcessGroup::broadcast(void* data, std::size_t count, DType dtype, int root) {
    check_buffer("broadcast", data, count);
    check_root("broadcast", root, size_);
    return finish("broadcast",
                  api_.Broadcast(data, data, count, to_nccl(dtype), root, comm_, stream_));
}

WorkPtr NcclProcessGroup::allgather(const void* in, void* out, std::size_t count_per_rank,
                                    DType dtype) {
    check_buffer("allgather", in, count_per_rank);
    check_buffer("allgather", out, count_per_rank);
    return finish("allgather",
                  api_.AllGather(in, out, count_per_rank, to_nccl(dtype), comm_, stream_));
}

WorkPtr NcclProcessGroup::reduce_scatter(const void* in, void* out, std::size_t count_per_rank,
                                         DType dtype, ReduceOp op) {
    check_buffer("reduce_scatter", in, count_per_rank);
    check_buffer("reduce_scatter", out, count_per_rank);
    return finish("reduce_scatter", api_.ReduceScatter(in, out, count_per_rank, to_nccl(dtype),
                                                       to_nccl(op), comm_, stream_));
}

WorkPtr NcclProcessGroup::barrier() {
    return finish("barrier", api_.AllReduce(barrier_buf_, barrier_buf_, 1, ncclInt32, ncclSum,
                                            comm_, stream_));
}

}  // namespace ptrun::ddp::detail::nccl
