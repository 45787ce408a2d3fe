#pragma once
/// The one table of the worker-contract variable names (torchrun's, spec §5).

#include <string_view>

namespace ptrun::env::names {

inline constexpr std::string_view kLocalRank = "LOCAL_RANK";
inline constexpr std::string_view kRank = "RANK";
inline constexpr std::string_view kGroupRank = "GROUP_RANK";
inline constexpr std::string_view kRoleRank = "ROLE_RANK";
inline constexpr std::string_view kRoleName = "ROLE_NAME";
inline constexpr std::string_view kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kWorldSize = "WORLD_SIZE";
inline constexpr std::string_view kGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr std::string_view kRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";
inline constexpr std::string_view kMasterPort = "MASTER_PORT";
inline constexpr std::string_view kRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr std::string_view kMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr std::string_view kRunId = "TORCHELASTIC_RUN_ID";
inline constexpr std::string_view kUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
inline constexpr std::string_view kUseLibuv = "USE_LIBUV";
inline constexpr std::string_view kErrorFile = "TORCHELASTIC_ERROR_FILE";
inline constexpr std::string_view kTorchNcclAsyncErrorHandling = "TORCH_NCCL_ASYNC_ERROR_HANDLING";
inline constexpr std::string_view kNcclAsyncErrorHandling = "NCCL_ASYNC_ERROR_HANDLING";
inline constexpr std::string_view kOmpNumThreads = "OMP_NUM_THREADS";
/// --requeue: how many times SLURM requeued the job (its SLURM_RESTART_COUNT; 0 at first).
inline constexpr std::string_view kRequeueCount = "PTRUN_REQUEUE_COUNT";
/// SLURM's count of a job's requeues, which PTRUN_REQUEUE_COUNT passes on.
inline constexpr std::string_view kSlurmRestartCount = "SLURM_RESTART_COUNT";

}  // namespace ptrun::env::names
