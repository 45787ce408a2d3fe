#pragma once
/// The kinds of accelerator ptrun finds, torch's name for each (--nproc-per-node gpu, xpu, hpu,
/// npu), and the variable each vendor's runtime reads to choose the devices a process sees.
/// Pure: values in, values out; placement/ finds the devices, the caller reads the environment.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/env/env_map.hpp"

namespace ptrun::env {

enum class DeviceKind {
    NvidiaGpu,  ///< torch "cuda" (--nproc-per-node gpu); CUDA_VISIBLE_DEVICES
    AmdGpu,     ///< torch "cuda" on ROCm (gpu); HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES
    IntelGpu,   ///< torch "xpu"; ZE_AFFINITY_MASK (Level Zero)
    Gaudi,      ///< torch "hpu"; HABANA_VISIBLE_MODULES (module ids, not indexes)
    AscendNpu,  ///< torch "npu" (torch_npu); ASCEND_RT_VISIBLE_DEVICES
};

/// Every kind, in the order `--nproc-per-node auto` tries them (torch.accelerator's choice is
/// the one accelerator torch was built for; a node rarely holds two kinds).
inline constexpr DeviceKind kDeviceKinds[] = {DeviceKind::NvidiaGpu, DeviceKind::AmdGpu,
                                              DeviceKind::IntelGpu, DeviceKind::Gaudi,
                                              DeviceKind::AscendNpu};

/// torch's device name as --nproc-per-node spells it: "gpu" (NVIDIA and AMD), "xpu", "hpu", "npu".
std::string_view torch_name(DeviceKind kind);

/// What one device is called in messages: "NVIDIA GPU", "AMD GPU", "Intel GPU", "Gaudi",
/// "Ascend NPU".
std::string_view device_noun(DeviceKind kind);

/// The variable ptrun sets to give a worker its devices: CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
/// ZE_AFFINITY_MASK, HABANA_VISIBLE_MODULES or ASCEND_RT_VISIBLE_DEVICES.
std::string_view visibility_variable(DeviceKind kind);

/// The variable in `env` that decides which devices of `kind` a process sees, when one is set:
/// for AMD HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES (HIP reads both, its own first;
/// ROCR_VISIBLE_DEVICES is applied before either, see parse_rocr_visible_devices); for the
/// others visibility_variable(kind).
std::optional<std::string> visibility_variable_set(DeviceKind kind, const EnvMap& env);

/// The devices `value` of `kind`'s variable makes visible, in order. NVIDIA and AMD: CUDA's rules
/// (parse_cuda_visible_devices; HIP reads ordinals and GPU- UUIDs alike). Intel: entries "N" or
/// "N.M" (device N, or its sub-device M); Gaudi and Ascend: module / device ids. For the last
/// three the list ends at the first entry that is malformed or repeated, as the Ascend runtime
/// documents ("1, 2" shows 1); "" shows none. Never throws.
std::vector<CudaDevice> parse_visible_devices(DeviceKind kind, std::string_view value);

/// The devices of `kind` a process with `env` sees: its variable parsed when set, limited to
/// `node_ids` (entries naming no device of the node end the list, as CUDA's do), else every id
/// in `node_ids`, in order. `node_ids`: how the variable names the node's devices, in the
/// runtime's order (indexes 0..n-1; Gaudi's module ids).
std::vector<CudaDevice> visible_devices(DeviceKind kind, const EnvMap& env,
                                        const std::vector<std::uint32_t>& node_ids);

/// ROCR_VISIBLE_DEVICES from `env` (ordinals and GPU- UUIDs, CUDA's rules): the AMD GPUs the
/// ROCm runtime shows, whose indexes HIP_VISIBLE_DEVICES then counts in; nullopt when unset.
std::optional<std::vector<CudaDevice>> parse_rocr_visible_devices(const EnvMap& env);

}  // namespace ptrun::env
