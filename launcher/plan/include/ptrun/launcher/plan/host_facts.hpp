#pragma once
/// Reads the facts `resolve` needs from this machine (hostname, CPUs, GPUs, a fresh run id).

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// CPUs in ptrun's affinity mask; GPUs: the devices CUDA_VISIBLE_DEVICES shows when it is set
/// (env::parse_cuda_visible_devices, CUDA's rules: "NoDevFiles" and "-1" show none; ordinals
/// past the driver's device count end the list when a driver is loaded), else ordinals for the
/// NVIDIA driver's /proc/driver/nvidia/gpus entries.
HostFacts read_host_facts(const env::EnvMap& env);

}  // namespace ptrun::launcher
