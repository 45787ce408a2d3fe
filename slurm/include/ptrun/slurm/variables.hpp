#pragma once
/// The one table of the SLURM_* (and CUDA) variable names ptrun reads. Where a step variable and
/// a job variable say the same thing, the step's wins: in `srun -N1` inside a 2-node job,
/// SLURM_NODELIST stays the job's "node[1-2]" while the step runs on "node1" only.
/// Deliberately absent: HOSTNAME (the batch host's name in every task) and
/// SLURM_SRUN_COMM_HOST / SLURM_LAUNCH_NODE_IPADDR (where srun runs, maybe a login node).

#include <string_view>

namespace ptrun::slurm::var {

inline constexpr std::string_view kJobId = "SLURM_JOB_ID";
inline constexpr std::string_view kStepId = "SLURM_STEP_ID";
inline constexpr std::string_view kStepIdOld = "SLURM_STEPID";

inline constexpr std::string_view kStepNodeList = "SLURM_STEP_NODELIST";
inline constexpr std::string_view kJobNodeList = "SLURM_JOB_NODELIST";
inline constexpr std::string_view kNodeList = "SLURM_NODELIST";

inline constexpr std::string_view kStepNumNodes = "SLURM_STEP_NUM_NODES";
inline constexpr std::string_view kNNodes = "SLURM_NNODES";
inline constexpr std::string_view kJobNumNodes = "SLURM_JOB_NUM_NODES";

inline constexpr std::string_view kStepNumTasks = "SLURM_STEP_NUM_TASKS";
inline constexpr std::string_view kNTasks = "SLURM_NTASKS";
inline constexpr std::string_view kNProcs = "SLURM_NPROCS";

inline constexpr std::string_view kStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE";
inline constexpr std::string_view kTasksPerNode = "SLURM_TASKS_PER_NODE";

inline constexpr std::string_view kNodeId = "SLURM_NODEID";
inline constexpr std::string_view kProcId = "SLURM_PROCID";
inline constexpr std::string_view kLocalId = "SLURM_LOCALID";

inline constexpr std::string_view kCpusOnNode = "SLURM_CPUS_ON_NODE";
inline constexpr std::string_view kGpusOnNode = "SLURM_GPUS_ON_NODE";
inline constexpr std::string_view kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";

}  // namespace ptrun::slurm::var
