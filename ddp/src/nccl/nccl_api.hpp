#pragma once
/// The few NCCL and CUDA runtime entry points the nccl backend uses, loaded at run time with
/// dlopen (libnccl.so.2, libcudart.so*): no NCCL or CUDA headers or libraries at build time.

#include <cstddef>
#include <optional>
#include <string>

namespace ptrun::ddp::detail::nccl {

/// ABI types, declared as NCCL 2.x and CUDA declare them.
using ncclComm_t = struct ncclComm*;
using cudaStream_t = struct CUstream_st*;
using cudaEvent_t = struct CUevent_st*;
struct ncclUniqueId {
    char internal[128];
};
enum ncclDataType_t : int { ncclInt32 = 2, ncclInt64 = 4, ncclFloat32 = 7, ncclFloat64 = 8 };
enum ncclRedOp_t : int { ncclSum = 0, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };
using ncclResult_t = int;  // 0 = ncclSuccess
using cudaError_t = int;   // 0 = cudaSuccess, 600 = cudaErrorNotReady
inline constexpr int kCudaErrorNotReady = 600;

/// Function table filled from the loaded libraries.
struct Api {
    ncclResult_t (*GetUniqueId)(ncclUniqueId*);
    ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*CommAbort)(ncclComm_t);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*);
    const char* (*GetErrorString)(ncclResult_t);
    ncclResult_t (*AllReduce)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t,
                              ncclComm_t, cudaStream_t);
    ncclResult_t (*Broadcast)(const void*, void*, std::size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*AllGather)(const void*, void*, std::size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*ReduceScatter)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t,
                                  ncclComm_t, cudaStream_t);
    cudaError_t (*GetDeviceCount)(int*);
    cudaError_t (*SetDevice)(int);
    cudaError_t (*StreamCreate)(cudaStream_t*);
    cudaError_t (*StreamDestroy)(cudaStream_t);
    cudaError_t (*EventCreate)(cudaEvent_t*);
    cudaError_t (*EventDestroy)(cudaEvent_t);
    cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t);
    cudaError_t (*EventQuery)(cudaEvent_t);
    cudaError_t (*Malloc)(void**, std::size_t);
    cudaError_t (*Free)(void*);
    cudaError_t (*Memcpy)(void*, const void*, std::size_t, int kind);  // kind 4 = cudaMemcpyDefault
    cudaError_t (*DeviceSynchronize)();
    const char* (*CudaErrorString)(cudaError_t);
};

/// The process-wide table, loading the libraries on first use (thread-safe); nullptr when they
/// cannot be loaded, with the reason in `why` (e.g. "libnccl.so.2: cannot open shared object").
const Api* load(std::string* why = nullptr);

/// Number of CUDA devices (0 when the runtime does not load or reports none).
int device_count();

}  // namespace ptrun::ddp::detail::nccl
