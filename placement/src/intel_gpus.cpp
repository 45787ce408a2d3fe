// Intel GPUs as Level Zero shows them (torch "xpu"). Sources: the Level Zero specification,
// "Device Hierarchy" and "Affinity Mask" (oneapi-src.github.io/level-zero-spec, core/PROG.html):
// in the default FLAT hierarchy each tile of a card is a device of its own; the Linux DRM
// render nodes (/sys/class/drm/renderD*) that i915 and xe create, and xe's device/tileN
// directories (kernel Documentation/gpu/xe).
#include <algorithm>

#include "ptrun/placement/accelerators.hpp"
#include "sysfs_files.hpp"

namespace ptrun::placement {

namespace fs = std::filesystem;

std::optional<FoundDevices> find_intel_gpus(const fs::path& root) {
    FoundDevices found{env::DeviceKind::IntelGpu, {}, "/sys/class/drm"};
    std::vector<std::pair<std::string, std::size_t>> cards;  // bus, tiles
    for (const auto& [minor_number, node] : detail::numbered(root / "sys/class/drm", "renderD")) {
        const auto device = node / "device";
        if (detail::first_line(device / "vendor").value_or("") != "0x8086") continue;
        auto driver = detail::uevent_value(device / "uevent", "DRIVER");
        if (driver != "i915" && driver != "xe") continue;
        std::string bus = detail::pci_address(device);
        std::size_t tiles = std::max<std::size_t>(1, detail::numbered(device, "tile").size());
        cards.emplace_back(bus, tiles);
    }
    std::sort(cards.begin(), cards.end());  // PCI order, as Level Zero enumerates
    for (const auto& [bus, tiles] : cards) {
        for (std::size_t t = 0; t < tiles; ++t) {
            found.devices.push_back(
                FoundDevice{static_cast<std::uint32_t>(found.devices.size()), bus, {}});
        }
    }
    if (found.devices.empty()) return std::nullopt;
    return found;
}

}  // namespace ptrun::placement
