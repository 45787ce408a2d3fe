#pragma once
/// Reads the facts `resolve` needs from this machine (hostname, CPUs, GPUs, a fresh run id).

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/launch_config.hpp"

namespace ptrun::launcher {

/// CPUs in ptrun's affinity mask; GPUs from CUDA_VISIBLE_DEVICES when set, else the NVIDIA
/// driver's /proc/driver/nvidia/gpus entries.
HostFacts read_host_facts(const env::EnvMap& env);

/// The number of devices a CUDA_VISIBLE_DEVICES value names ("" and "-1"-led lists name none).
int count_visible_devices(std::string_view value);

}  // namespace ptrun::launcher
