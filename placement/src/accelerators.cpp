#include "ptrun/placement/accelerators.hpp"

#include <algorithm>

#include "ptrun/placement/placement_error.hpp"
#include "ptrun/placement/topology.hpp"

namespace ptrun::placement {

namespace fs = std::filesystem;

std::vector<std::uint32_t> FoundDevices::ids() const {
    std::vector<std::uint32_t> out;
    for (const auto& d : devices) out.push_back(d.id);
    return out;
}

std::optional<FoundDevices> find_nvidia_gpus(const fs::path& root) {
    // The NVIDIA driver makes one directory per GPU, named by its PCI bus id (NVIDIA driver
    // README, "Procfs Interface"); NVML and nvidia-smi count GPUs in that bus order.
    FoundDevices found{env::DeviceKind::NvidiaGpu, {}, "/proc/driver/nvidia/gpus"};
    std::vector<std::string> buses;
    std::error_code ec;
    for (auto it = fs::directory_iterator(root / "proc/driver/nvidia/gpus", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
        buses.push_back(it->path().filename().string());
    }
    if (buses.empty()) return std::nullopt;
    std::sort(buses.begin(), buses.end());
    for (const auto& bus : buses) {
        std::string sysfs;
        try {
            sysfs = sysfs_bus_id(bus);
        } catch (const PlacementError&) {
        }
        found.devices.push_back(
            FoundDevice{static_cast<std::uint32_t>(found.devices.size()), sysfs, {}});
    }
    return found;
}

std::string_view where_looked(env::DeviceKind kind) {
    switch (kind) {
        case env::DeviceKind::NvidiaGpu:
            return "/proc/driver/nvidia/gpus";
        case env::DeviceKind::AmdGpu:
            return "/sys/class/kfd/kfd/topology";
        case env::DeviceKind::IntelGpu:
            return "/sys/class/drm (i915 and xe render nodes)";
        case env::DeviceKind::Gaudi:
            return "/sys/class/accel and /dev/accel";
        case env::DeviceKind::AscendNpu:
            return "/dev/davinci*";
    }
    return "";
}

std::vector<FoundDevices> find_accelerators(const fs::path& root) {
    std::vector<FoundDevices> all;
    for (auto find :
         {find_nvidia_gpus, find_amd_gpus, find_intel_gpus, find_gaudis, find_ascend_npus}) {
        if (auto found = find(root)) all.push_back(std::move(*found));
    }
    return all;
}

namespace {

class FoundBusIds final : public GpuBusIds {
  public:
    explicit FoundBusIds(FoundDevices found) : found_(std::move(found)) {}
    std::string bus_id(const env::CudaDevice& device) override {
        const std::string noun(env::device_noun(found_.kind));
        if (device.ordinal && device.id == std::to_string(*device.ordinal)) {
            for (const auto& d : found_.devices) {
                if (d.id == *device.ordinal) return d.bus;
            }
        }
        throw PlacementError("no " + noun + " '" + device.id + "' among the " +
                             std::to_string(found_.devices.size()) + " in " + found_.source);
    }

  private:
    FoundDevices found_;
};

}  // namespace

std::unique_ptr<GpuBusIds> found_bus_ids(const FoundDevices& found, std::string& why_not) {
    for (const auto& d : found.devices) {
        if (d.bus.empty()) {
            why_not = std::string(env::device_noun(found.kind)) + " " + std::to_string(d.id) +
                      " has no PCI address in " + found.source;
            return nullptr;
        }
    }
    return std::make_unique<FoundBusIds>(found);
}

}  // namespace ptrun::placement
