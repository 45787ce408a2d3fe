#pragma once
/// What each local worker gets from --nproc-per-node gpu:LIST (xpu:LIST, ...),
/// --virtual-local-rank and --numa-binding: its devices (CUDA_VISIBLE_DEVICES, or the variable of
/// the workers' kind of device: HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK, HABANA_VISIBLE_MODULES,
/// ASCEND_RT_VISIBLE_DEVICES), LOCAL_RANK and CPU/memory binding, planned once per run before any
/// worker starts. The topology is read only under --numa-binding, and NVML is loaded only when a
/// binding has NVIDIA GPUs to place (other vendors' devices are placed from sysfs).

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/plan/explain.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/placement/apply_binding.hpp"
#include "ptrun/placement/gpu_locator.hpp"
#include "ptrun/placement/process_limits.hpp"

namespace ptrun::launcher {

/// One local worker's devices and binding.
struct WorkerSlot {
    std::optional<std::string> visible_devices;       ///< the kind's variable; nullopt: inherited
    std::optional<placement::WorkerBinding> binding;  ///< --numa-binding
    placement::PreparedBinding prepared;              ///< the binding's masks (when bound)
};

struct LocalPlacement {
    std::vector<WorkerSlot> workers;                    ///< one per local rank
    bool virtual_local_rank = false;                    ///< every worker gets LOCAL_RANK=0
    env::DeviceKind kind = env::DeviceKind::NvidiaGpu;  ///< LaunchConfig::device_kind
    /// The devices ptrun's environment shows: what a worker whose visibility variable ptrun
    /// leaves unset sees.
    std::vector<env::CudaDevice> visible;
    /// CUDA_DEVICE_ORDER for every worker: PCI_BUS_ID when ptrun names devices by ordinal or
    /// binds near GPUs and the variable is unset (ordinals then mean what NVML, nvidia-smi and
    /// SLURM mean); nullopt leaves it alone.
    std::optional<std::string> cuda_device_order;
    /// What the plan could not do as asked, for the log ("NVML not loaded: ...").
    std::vector<std::string> warnings;
    /// SLURM one task per rank (PerRankLaunch): the one worker's place in the job, as the
    /// scheduler gave it; the agent starts it with this identity instead of its own.
    std::optional<FixedPlacement> scheduled;
};

/// Where the planner reads the machine; a seam so tests can present recorded machines.
struct PlacementSources {
    std::filesystem::path sys = "/sys";
    std::function<placement::ProcessLimits()> limits = placement::read_process_limits;
    /// NVML, or nullptr with the reason (placement::open_nvml); placement_sources gives other
    /// vendors' devices their bus ids from sysfs.
    std::function<std::unique_ptr<placement::GpuBusIds>(std::string&)> open_gpus =
        [](std::string& why) { return placement::open_nvml(why); };
};

/// Where the devices of `kind` found on `host` are read: sysfs under host.device_root, and for
/// any kind but NVIDIA the bus ids the detectors found (placement::found_bus_ids).
PlacementSources placement_sources(const HostFacts& host, env::DeviceKind kind);

/// The plan for `config`'s local workers. `visible`: the devices ptrun's environment `env`
/// shows (HostFacts::gpus). Workers use `config.gpu_selection` when given, else `visible`,
/// worker i the i-th device. Under --numa-binding, GPUs whose location NVML cannot give (no
/// driver) are left out with a warning and the workers are bound as CPU-only ones. Throws
/// UsageError when a binding cannot be made (the message names the worker, GPU or node), and
/// EnvironmentError when the topology cannot be read. (make_launch_plan refuses bindings with one
/// SLURM task per rank.)
LocalPlacement plan_local_placement(const LaunchConfig& config,
                                    const std::vector<env::CudaDevice>& visible,
                                    const env::EnvMap& env, const PlacementSources& sources = {});

/// The environment changes `plan` makes for local rank `local_rank` on top of worker_env().
void apply_to_env(const LocalPlacement& plan, int local_rank, env::EnvMap& worker_env);

/// The devices a worker with environment `worker_env` sees, as its kind's variable would list
/// them ("" for none).
std::string worker_gpus(const LocalPlacement& plan, const env::EnvMap& worker_env);

/// --explain's rows for the plan: each worker's GPUs and binding (one row per worker), and
/// CUDA_DEVICE_ORDER when ptrun sets it; the plan's warnings are the caller's to print.
std::vector<ExplainRow> explain_rows(const LocalPlacement& plan, const LaunchConfig& config,
                                     const env::EnvMap& env);

}  // namespace ptrun::launcher
