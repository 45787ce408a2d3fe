#pragma once
/// The accelerators a node holds, found from the kernel's files alone (no vendor library): each
/// vendor's detector reads under a root directory (normally "/"; tests pass recorded trees).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/env/device_kind.hpp"
#include "ptrun/placement/gpu_locator.hpp"

namespace ptrun::placement {

/// One device as its runtime enumerates it.
struct FoundDevice {
    std::uint32_t id = 0;  ///< how the visibility variable names it: its index (Gaudi: module id)
    std::string bus;       ///< its PCI address in sysfs form ("0000:3b:00.0"); "" when unknown
    std::string uuid;  ///< AMD: "GPU-" and kfd's unique_id in hex, as ROCR_VISIBLE_DEVICES takes it
    bool operator==(const FoundDevice&) const = default;
};

/// The devices of one kind on this node, in the runtime's order, and where they were found.
struct FoundDevices {
    env::DeviceKind kind = env::DeviceKind::NvidiaGpu;
    std::vector<FoundDevice> devices;
    std::string source;  ///< the path read, as on a real node ("/sys/class/kfd/kfd/topology")
    /// The ids devices are named by (FoundDevice::id), in order.
    std::vector<std::uint32_t> ids() const;
};

/// NVIDIA: the driver's /proc/driver/nvidia/gpus/<bus id> entries, in bus order (NVML's).
std::optional<FoundDevices> find_nvidia_gpus(const std::filesystem::path& root);
/// AMD: kfd's topology nodes (sys/class/kfd/kfd/topology/nodes/N/properties) with simd_count > 0,
/// in node order (the ROCm runtime's); domain and location_id give the PCI address.
std::optional<FoundDevices> find_amd_gpus(const std::filesystem::path& root);
/// Intel: DRM render nodes (sys/class/drm/renderD*) of vendor 0x8086 driven by i915 or xe, in
/// PCI order; a card whose xe driver lists tiles (device/tile*) counts one device per tile, as
/// Level Zero's default FLAT hierarchy shows them.
std::optional<FoundDevices> find_intel_gpus(const std::filesystem::path& root);
/// Gaudi: habanalabs devices (sys/class/accel/accel*/device, vendor 0x1da3), named by their
/// module_id, in module order; else the /dev/accel/accel* nodes, named 0..n-1.
std::optional<FoundDevices> find_gaudis(const std::filesystem::path& root);
/// Ascend: the /dev/davinciN device nodes (davinci_manager and the like are not devices), in
/// N order; the kernel gives no PCI address for them.
std::optional<FoundDevices> find_ascend_npus(const std::filesystem::path& root);

/// Where the detector of `kind` looks, for messages: "/sys/class/drm (i915 and xe render nodes)".
std::string_view where_looked(env::DeviceKind kind);

/// Every kind found under `root`, in `--nproc-per-node auto`'s order (env::kDeviceKinds). Reads
/// files only; never throws (an unreadable file reads as no device).
std::vector<FoundDevices> find_accelerators(const std::filesystem::path& root = "/");

/// Bus ids from the devices found: a device is the one whose id is its ordinal (ids that are
/// not ordinals, such as UUIDs and sub-devices, throw PlacementError). nullptr with `why_not`
/// when some device has no known PCI address (Ascend).
std::unique_ptr<GpuBusIds> found_bus_ids(const FoundDevices& found, std::string& why_not);

}  // namespace ptrun::placement
