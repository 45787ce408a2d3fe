// Intel Gaudi (torch "hpu"). Sources: the habanalabs driver's sysfs attributes (kernel
// Documentation/ABI/testing/sysfs-driver-habanalabs: /sys/class/accel/accel<n>/device/module_id,
// "the device's module id"); Intel Gaudi "Multiple Tenants on HPU" (docs.habana.ai,
// Orchestration/Multiple_Tenants_on_HPU): HABANA_VISIBLE_MODULES names devices by module id.
#include <algorithm>

#include "ptrun/placement/accelerators.hpp"
#include "sysfs_files.hpp"

namespace ptrun::placement {

namespace fs = std::filesystem;

std::optional<FoundDevices> find_gaudis(const fs::path& root) {
    FoundDevices found{env::DeviceKind::Gaudi, {}, "/sys/class/accel"};
    for (const auto& [n, accel] : detail::numbered(root / "sys/class/accel", "accel")) {
        const auto device = accel / "device";
        auto driver = detail::uevent_value(device / "uevent", "DRIVER");
        auto vendor = detail::first_line(device / "vendor");
        if (driver != "habanalabs" && vendor != "0x1da3") continue;
        auto module = detail::first_line(device / "module_id");
        std::uint32_t id = static_cast<std::uint32_t>(n);
        if (module && !module->empty() && std::all_of(module->begin(), module->end(), [](char c) {
                return c >= '0' && c <= '9';
            }))
            id = static_cast<std::uint32_t>(std::stoul(*module));
        found.devices.push_back(FoundDevice{id, detail::pci_address(device), {}});
    }
    if (found.devices.empty()) {
        // No sysfs (some containers): the device nodes, named in order.
        found.source = "/dev/accel";
        for (const auto& entry : detail::numbered(root / "dev/accel", "accel")) {
            found.devices.push_back(FoundDevice{static_cast<std::uint32_t>(entry.first), {}, {}});
        }
    }
    if (found.devices.empty()) return std::nullopt;
    std::sort(found.devices.begin(), found.devices.end(),
              [](const FoundDevice& a, const FoundDevice& b) { return a.id < b.id; });
    return found;
}

}  // namespace ptrun::placement
