// AMD GPUs from the kfd topology, as the ROCm runtime enumerates them. Sources: the kernel's
// kfd topology (drivers/gpu/drm/amd/amdkfd/kfd_topology.c: location_id is pci_dev_id(), that is
// bus << 8 | device << 3 | function, and domain the PCI domain) and libhsakmt's reader
// (ROCm/ROCR-Runtime libhsakmt/src/topology.c: a node whose simd_count is 0 is a CPU node).
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "ptrun/placement/accelerators.hpp"
#include "sysfs_files.hpp"

namespace ptrun::placement {

namespace fs = std::filesystem;

namespace {

/// A properties file's "name value" lines.
std::map<std::string, std::uint64_t> properties(const fs::path& file) {
    std::map<std::string, std::uint64_t> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string name;
        std::uint64_t value = 0;
        if (words >> name >> value) out[name] = value;
    }
    return out;
}

}  // namespace

std::optional<FoundDevices> find_amd_gpus(const fs::path& root) {
    FoundDevices found{env::DeviceKind::AmdGpu, {}, "/sys/class/kfd/kfd/topology"};
    for (const auto& [node, dir] :
         detail::numbered(root / "sys/class/kfd/kfd/topology/nodes", "")) {
        auto p = properties(dir / "properties");
        if (p["simd_count"] == 0) continue;  // a CPU node
        char bus[16];
        const auto location = p["location_id"];
        std::snprintf(
            bus, sizeof bus, "%04x:%02x:%02x.%x", static_cast<unsigned>(p["domain"] & 0xffff),
            static_cast<unsigned>((location >> 8) & 0xff),
            static_cast<unsigned>((location >> 3) & 0x1f), static_cast<unsigned>(location & 0x7));
        std::string uuid;
        if (auto id = p.find("unique_id"); id != p.end() && id->second != 0) {
            char hex[24];
            std::snprintf(hex, sizeof hex, "GPU-%016" PRIx64, id->second);
            uuid = hex;
        }
        found.devices.push_back(
            FoundDevice{static_cast<std::uint32_t>(found.devices.size()), bus, uuid});
    }
    if (found.devices.empty()) return std::nullopt;
    return found;
}

}  // namespace ptrun::placement
