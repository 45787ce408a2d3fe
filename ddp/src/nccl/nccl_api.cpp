#include "nccl_api.hpp"

#include <dlfcn.h>

#include <mutex>

namespace ptrun::ddp::detail::nccl {
namespace {

struct Loaded {
    Api api{};
    bool ok = false;
    std::string why;
};

void* open_first(const char* const* names, std::string& why) {
    for (const char* const* n = names; *n != nullptr; ++n) {
        if (void* h = ::dlopen(*n, RTLD_NOW | RTLD_GLOBAL)) return h;
        const char* err = ::dlerror();
        why = err != nullptr ? err : *n;
    }
    return nullptr;
}

template <class F>
bool bind(void* lib, const char* name, F& slot, std::string& why) {
    slot = reinterpret_cast<F>(::dlsym(lib, name));
    if (slot == nullptr) why = std::string("missing symbol ") + name;
    return slot != nullptr;
}

Loaded load_once() {
    Loaded l;
    static const char* const cudart_names[] = {"libcudart.so", "libcudart.so.12",
                                               "libcudart.so.11.0", "libcudart.so.13", nullptr};
    static const char* const nccl_names[] = {"libnccl.so.2", "libnccl.so", nullptr};
    void* cudart = open_first(cudart_names, l.why);
    if (cudart == nullptr) return l;
    void* nccl = open_first(nccl_names, l.why);
    if (nccl == nullptr) return l;
    Api& a = l.api;
    l.ok = bind(nccl, "ncclGetUniqueId", a.GetUniqueId, l.why) &&
           bind(nccl, "ncclCommInitRank", a.CommInitRank, l.why) &&
           bind(nccl, "ncclCommDestroy", a.CommDestroy, l.why) &&
           bind(nccl, "ncclCommAbort", a.CommAbort, l.why) &&
           bind(nccl, "ncclCommGetAsyncError", a.CommGetAsyncError, l.why) &&
           bind(nccl, "ncclGetErrorString", a.GetErrorString, l.why) &&
           bind(nccl, "ncclAllReduce", a.AllReduce, l.why) &&
           bind(nccl, "ncclBroadcast", a.Broadcast, l.why) &&
           bind(nccl, "ncclAllGather", a.AllGather, l.why) &&
           bind(nccl, "ncclReduceScatter", a.ReduceScatter, l.why) &&
           bind(cudart, "cudaGetDeviceCount", a.GetDeviceCount, l.why) &&
           bind(cudart, "cudaSetDevice", a.SetDevice, l.why) &&
           bind(cudart, "cudaStreamCreate", a.StreamCreate, l.why) &&
           bind(cudart, "cudaStreamDestroy", a.StreamDestroy, l.why) &&
           bind(cudart, "cudaEventCreate", a.EventCreate, l.why) &&
           bind(cudart, "cudaEventDestroy", a.EventDestroy, l.why) &&
           bind(cudart, "cudaEventRecord", a.EventRecord, l.why) &&
           bind(cudart, "cudaEventQuery", a.EventQuery, l.why) &&
           bind(cudart, "cudaMalloc", a.Malloc, l.why) && bind(cudart, "cudaFree", a.Free, l.why) &&
           bind(cudart, "cudaMemcpy", a.Memcpy, l.why) &&
           bind(cudart, "cudaDeviceSynchronize", a.DeviceSynchronize, l.why) &&
           bind(cudart, "cudaGetErrorString", a.CudaErrorString, l.why);
    return l;
}

}  // namespace

const Api* load(std::string* why) {
    static const Loaded loaded = load_once();  // the libraries stay loaded for the process
    if (!loaded.ok && why != nullptr) *why = loaded.why;
    return loaded.ok ? &loaded.api : nullptr;
}

int device_count() {
    const Api* api = load();
    int n = 0;
    if (api == nullptr || api->GetDeviceCount(&n) != 0) return 0;
    return n;
}

}  // namespace ptrun::ddp::detail::nccl
