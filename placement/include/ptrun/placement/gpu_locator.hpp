#pragma once
/// Where the GPUs the workers see sit: a device named in CUDA_VISIBLE_DEVICES -> its PCI bus id
/// (through NVML, loaded at run time only when a binding needs it) -> its NUMA node (sysfs).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/placement/binding_plan.hpp"

namespace ptrun::placement {

/// Maps devices to PCI bus ids; an interface so tests can present a fake driver.
class GpuBusIds {
  public:
    virtual ~GpuBusIds() = default;
    /// The PCI bus id of `device` ("0000:3b:00.0"). Ordinals count in PCI bus order, as NVML,
    /// nvidia-smi and SLURM do (CUDA agrees under CUDA_DEVICE_ORDER=PCI_BUS_ID, and on nodes of
    /// identical GPUs); UUIDs may be unique prefixes; a MIG device maps to its GPU. Throws
    /// PlacementError naming the device when the driver does not know it.
    virtual std::string bus_id(const env::CudaDevice& device) = 0;
};

/// NVML from `library` (dlopen'ed now, closed with the result), initialised; nullptr with
/// `why_not` saying why when the library cannot be loaded, lacks a function, or fails to
/// initialise (no driver). Never throws for a missing driver.
std::unique_ptr<GpuBusIds> open_nvml(std::string& why_not,
                                     const char* library = "libnvidia-ml.so.1");

/// The GpuPlace of each of `devices`: named "GPU <id> (<bus id>)", on the NUMA node sysfs under
/// `sys` gives its PCI device. Throws PlacementError from either source.
std::vector<GpuPlace> locate_gpus(const std::vector<env::CudaDevice>& devices, GpuBusIds& ids,
                                  const std::filesystem::path& sys = "/sys");

}  // namespace ptrun::placement
