// A stand-in for libnccl.so.2 and libcudart.so on the CPU, so that the nccl backend's plumbing
// (run-time loading, the unique id through the store, streams, events, async errors, abort on
// timeout) is tested where no GPU is. "Device memory" is host memory; a stream is a thread that
// runs its queue in order; an event completes when its stream reaches it; the ranks of a
// communicator meet in a shared-memory file named by the unique id (unlinked once all joined).
// It checks nothing NCCL would not: it is a test double, not a reference.
// FAKE_NCCL_DEVICES sets the device count (default 8).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

constexpr int kMaxRanks = 8;
constexpr std::size_t kSlotBytes = std::size_t{4} << 20;
constexpr auto kGiveUp = std::chrono::seconds(60);  // a barrier nobody completes ends as an error

enum Result : int { kSuccess = 0, kSystemError = 2, kInvalidArgument = 4, kRemoteError = 6 };
enum DataType : int { kInt32 = 2, kInt64 = 4, kFloat32 = 7, kFloat64 = 8 };
enum RedOp : int { kSum = 0, kMax = 2, kMin = 3, kAvg = 4 };

struct Shared {
    std::atomic<std::uint64_t> arrived[kMaxRanks];
};

std::size_t shared_bytes(int nranks) {
    return 4096 + static_cast<std::size_t>(nranks) * kSlotBytes;
}

std::size_t type_size(int t) { return t == kInt32 || t == kFloat32 ? 4 : 8; }

bool valid_type(int t) { return t == kInt32 || t == kInt64 || t == kFloat32 || t == kFloat64; }

bool valid_op(int op) { return op == kSum || op == kMax || op == kMin || op == kAvg; }

}  // namespace

struct ncclUniqueId {
    char internal[128];
};

struct ncclComm {
    int rank = 0;
    int nranks = 0;
    Shared* shared = nullptr;
    std::uint64_t phase = 0;
    std::atomic<bool> aborted{false};
    std::atomic<int> async_error{kSuccess};

    char* slot(int r) const {
        return reinterpret_cast<char*>(shared) + 4096 + static_cast<std::size_t>(r) * kSlotBytes;
    }

    /// Every rank reaches this point; false when aborted or given up on (async error set).
    bool barrier() {
        ++phase;
        shared->arrived[rank].store(phase, std::memory_order_release);
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < nranks; ++r) {
            while (shared->arrived[r].load(std::memory_order_acquire) < phase) {
                if (aborted.load() || std::chrono::steady_clock::now() - start > kGiveUp) {
                    async_error.store(kRemoteError);
                    return false;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
        }
        return true;
    }
};

struct CUstream_st {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool busy = false;
    bool stopping = false;
    std::thread worker;

    CUstream_st() : worker([this] { run(); }) {}

    void push(std::function<void()> task) {
        {
            std::lock_guard lock(mutex);
            queue.push_back(std::move(task));
        }
        cv.notify_all();
    }
    void drain() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [this] { return queue.empty() && !busy; });
    }
    void stop() {
        {
            std::lock_guard lock(mutex);
            stopping = true;
        }
        cv.notify_all();
        worker.join();
    }

  private:
    void run() {
        std::unique_lock lock(mutex);
        for (;;) {
            cv.wait(lock, [this] { return stopping || !queue.empty(); });
            if (queue.empty()) return;
            auto task = std::move(queue.front());
            queue.pop_front();
            busy = true;
            lock.unlock();
            task();
            lock.lock();
            busy = false;
            cv.notify_all();
        }
    }
};

/// An event's state is shared with the stream task that completes it: as in CUDA, an event may be
/// destroyed while its record is still queued (a collective aborted on a dead peer).
struct CUevent_st {
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(true);
};

namespace {

std::mutex streams_mutex;
std::vector<CUstream_st*> streams;

template <class T>
void reduce_into(T* out, const std::vector<const T*>& ins, std::size_t count, int op) {
    for (std::size_t i = 0; i < count; ++i) {
        T acc = ins[0][i];
        for (std::size_t r = 1; r < ins.size(); ++r) {
            const T v = ins[r][i];
            if (op == kMin)
                acc = v < acc ? v : acc;
            else if (op == kMax)
                acc = acc < v ? v : acc;
            else
                acc = static_cast<T>(acc + v);
        }
        out[i] = op == kAvg ? static_cast<T>(acc / static_cast<T>(ins.size())) : acc;
    }
}

/// out = op over ranks of the `count` elements at byte `offset` of every slot.
void reduce_slots(const ncclComm* comm, void* out, std::size_t offset, std::size_t count, int type,
                  int op) {
    const auto gather = [&](auto* typed_out) {
        using T = std::remove_pointer_t<decltype(typed_out)>;
        std::vector<const T*> ins;
        for (int r = 0; r < comm->nranks; ++r) {
            ins.push_back(reinterpret_cast<const T*>(comm->slot(r) + offset));
        }
        reduce_into(typed_out, ins, count, op);
    };
    switch (type) {
        case kInt32:
            return gather(static_cast<std::int32_t*>(out));
        case kInt64:
            return gather(static_cast<std::int64_t*>(out));
        case kFloat32:
            return gather(static_cast<float*>(out));
        default:
            return gather(static_cast<double*>(out));
    }
}

/// Queues `body` (between two barriers' worth of work) on `stream` unless the comm is aborted.
int enqueue(ncclComm* comm, CUstream_st* stream, std::size_t slot_bytes,
            std::function<void()> body) {
    if (comm == nullptr || stream == nullptr) return kInvalidArgument;
    if (slot_bytes > kSlotBytes) return kInvalidArgument;
    if (comm->aborted.load()) return kSystemError;
    // Aborted before it ran: touches no buffer (the caller may have freed them); an aborted comm
    // stays allocated, so the check itself is safe.
    stream->push([comm, body = std::move(body)] {
        if (!comm->aborted.load()) body();
    });
    return kSuccess;
}

}  // namespace

extern "C" {

int ncclGetUniqueId(ncclUniqueId* id) {
    std::memset(id->internal, 0, sizeof id->internal);
    std::random_device rd;
    std::snprintf(id->internal, sizeof id->internal, "/ptrun-fake-nccl-%d-%08x%08x", getpid(), rd(),
                  rd());
    return kSuccess;
}

int ncclCommInitRank(ncclComm** out, int nranks, ncclUniqueId id, int rank) {
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) return kInvalidArgument;
    id.internal[sizeof id.internal - 1] = '\0';
    const int fd = shm_open(id.internal, O_CREAT | O_RDWR, 0600);
    if (fd < 0) return kSystemError;
    const std::size_t bytes = shared_bytes(nranks);
    void* map = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
        map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED) return kSystemError;
    auto* comm = new ncclComm();
    comm->rank = rank;
    comm->nranks = nranks;
    comm->shared = static_cast<Shared*>(map);
    const bool joined = comm->barrier();  // everyone has the file open: its name can go
    if (rank == 0) shm_unlink(id.internal);
    if (!joined) {
        munmap(map, bytes);
        delete comm;
        return kRemoteError;
    }
    *out = comm;
    return kSuccess;
}

int ncclCommDestroy(ncclComm* comm) {
    if (comm == nullptr) return kInvalidArgument;
    munmap(comm->shared, shared_bytes(comm->nranks));
    delete comm;
    return kSuccess;
}

int ncclCommAbort(ncclComm* comm) {
    if (comm == nullptr) return kInvalidArgument;
    comm->aborted.store(true);  // a barrier in progress gives up; the comm stays mapped (leaked)
    return kSuccess;
}

int ncclCommGetAsyncError(ncclComm* comm, int* result) {
    if (comm == nullptr) return kInvalidArgument;
    *result = comm->async_error.load();
    return kSuccess;
}

const char* ncclGetErrorString(int result) {
    switch (result) {
        case kSuccess:
            return "no error";
        case kSystemError:
            return "unhandled system error (fake)";
        case kInvalidArgument:
            return "invalid argument (fake)";
        case kRemoteError:
            return "remote process exited or there was a network error (fake)";
        default:
            return "unknown result (fake)";
    }
}

int ncclAllReduce(const void* send, void* recv, std::size_t count, int type, int op, ncclComm* comm,
                  CUstream_st* stream) {
    if (!valid_type(type) || !valid_op(op)) return kInvalidArgument;
    const std::size_t bytes = count * type_size(type);
    return enqueue(comm, stream, bytes, [=] {
        std::memcpy(comm->slot(comm->rank), send, bytes);
        if (!comm->barrier()) return;
        reduce_slots(comm, recv, 0, count, type, op);
        comm->barrier();
    });
}

int ncclBroadcast(const void* send, void* recv, std::size_t count, int type, int root,
                  ncclComm* comm, CUstream_st* stream) {
    if (!valid_type(type) || comm == nullptr || root < 0 || root >= comm->nranks) {
        return kInvalidArgument;
    }
    const std::size_t bytes = count * type_size(type);
    return enqueue(comm, stream, bytes, [=] {
        if (comm->rank == root) std::memcpy(comm->slot(root), send, bytes);
        if (!comm->barrier()) return;
        std::memcpy(recv, comm->slot(root), bytes);
        comm->barrier();
    });
}

int ncclAllGather(const void* send, void* recv, std::size_t count, int type, ncclComm* comm,
                  CUstream_st* stream) {
    if (!valid_type(type)) return kInvalidArgument;
    const std::size_t bytes = count * type_size(type);
    return enqueue(comm, stream, bytes, [=] {
        std::memcpy(comm->slot(comm->rank), send, bytes);
        if (!comm->barrier()) return;
        for (int r = 0; r < comm->nranks; ++r) {
            std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(r) * bytes,
                        comm->slot(r), bytes);
        }
        comm->barrier();
    });
}

int ncclReduceScatter(const void* send, void* recv, std::size_t count, int type, int op,
                      ncclComm* comm, CUstream_st* stream) {
    if (!valid_type(type) || !valid_op(op) || comm == nullptr) return kInvalidArgument;
    const std::size_t bytes = count * type_size(type);
    const std::size_t all = bytes * static_cast<std::size_t>(comm->nranks);
    return enqueue(comm, stream, all, [=] {
        std::memcpy(comm->slot(comm->rank), send, all);
        if (!comm->barrier()) return;
        reduce_slots(comm, recv, static_cast<std::size_t>(comm->rank) * bytes, count, type, op);
        comm->barrier();
    });
}

int cudaGetDeviceCount(int* count) {
    const char* env = std::getenv("FAKE_NCCL_DEVICES");
    *count = env != nullptr ? std::atoi(env) : 8;
    return 0;
}

int cudaSetDevice(int device) {
    int count = 0;
    cudaGetDeviceCount(&count);
    return device >= 0 && device < count ? 0 : 101;  // cudaErrorInvalidDevice
}

int cudaStreamCreate(CUstream_st** stream) {
    *stream = new CUstream_st();
    std::lock_guard lock(streams_mutex);
    streams.push_back(*stream);
    return 0;
}

int cudaStreamDestroy(CUstream_st* stream) {
    {
        std::lock_guard lock(streams_mutex);
        streams.erase(std::remove(streams.begin(), streams.end(), stream), streams.end());
    }
    stream->stop();  // runs what is queued first, as CUDA does
    delete stream;
    return 0;
}

int cudaEventCreate(CUevent_st** event) {
    *event = new CUevent_st();
    return 0;
}

int cudaEventDestroy(CUevent_st* event) {
    delete event;
    return 0;
}

int cudaEventRecord(CUevent_st* event, CUstream_st* stream) {
    if (stream == nullptr) return 400;  // cudaErrorInvalidResourceHandle
    event->done->store(false);
    stream->push([done = event->done] { done->store(true); });
    return 0;
}

int cudaEventQuery(CUevent_st* event) { return event->done->load() ? 0 : 600; }

int cudaMalloc(void** ptr, std::size_t bytes) {
    *ptr = std::malloc(std::max<std::size_t>(bytes, 1));
    return *ptr != nullptr ? 0 : 2;  // cudaErrorMemoryAllocation
}

int cudaFree(void* ptr) {
    std::free(ptr);
    return 0;
}

int cudaMemcpy(void* dst, const void* src, std::size_t bytes, int /*kind*/) {
    std::memcpy(dst, src, bytes);
    return 0;
}

int cudaDeviceSynchronize() {
    std::lock_guard lock(streams_mutex);
    for (CUstream_st* s : streams) s->drain();
    return 0;
}

const char* cudaGetErrorString(int error) {
    switch (error) {
        case 0:
            return "no error";
        case 2:
            return "out of memory (fake)";
        case 101:
            return "invalid device ordinal (fake)";
        case 400:
            return "invalid resource handle (fake)";
        case 600:
            return "device not ready (fake)";
        default:
            return "unknown error (fake)";
    }
}

}  // extern "C"
