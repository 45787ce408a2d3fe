#pragma once
/// Reads the facts `resolve` needs from this machine (hostname, CPUs, GPUs, a fresh run id).

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/plan/explain.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// CPUs in ptrun's affinity mask; GPUs: the devices CUDA_VISIBLE_DEVICES shows when it is set
/// (env::parse_cuda_visible_devices, CUDA's rules: "NoDevFiles" and "-1" show none; ordinals
/// past the driver's device count end the list when a driver is loaded), else ordinals for the
/// NVIDIA driver's /proc/driver/nvidia/gpus entries. Without an NVIDIA driver and with AMD GPUs,
/// the AMD GPUs HIP would show (ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES or
/// CUDA_VISIBLE_DEVICES). Every other accelerator found (placement::find_accelerators) under
/// PTRUN_DEVICE_ROOT (default "/": a recorded tree for tests) goes to `accelerators`.
HostFacts read_host_facts(const env::EnvMap& env);

/// A host with the most of everything: env::kMaxCudaDevices devices of every kind, all visible,
/// and as many CPUs. `resolve` against it refuses only what no host could take (a bad value's
/// syntax, a contradiction between options), never what depends on the host's devices: the
/// launching ptrun of --hosts checks each host's options with it before starting anything.
HostFacts any_host_facts();

/// The devices of `found` (AMD GPUs) that ROCR_VISIBLE_DEVICES in `env` leaves, in its order,
/// renumbered 0..n-1 as HIP counts them; an entry naming no GPU (index or kfd UUID) ends the list.
placement::FoundDevices after_rocr(placement::FoundDevices found, const env::EnvMap& env);

/// --explain's row saying which accelerators were found and where: "4 AMD GPUs (from
/// /sys/class/kfd/kfd/topology)"; with NVIDIA and AMD GPUs both, that `gpu` counts NVIDIA's.
ExplainRow explain_devices_row(const HostFacts& host);

}  // namespace ptrun::launcher
