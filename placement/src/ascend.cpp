// Huawei Ascend NPUs (torch "npu", torch_npu). Sources: CANN "ASCEND_RT_VISIBLE_DEVICES"
// (hiascend.com, maintenref/envvar/envref_07_0028.html): devices are named 0..n-1; the Ascend
// driver's device nodes /dev/davinci<N> beside /dev/davinci_manager, /dev/devmm_svm and
// /dev/hisi_hdc (Ascend container docs; Ray's python/ray/_private/accelerators/npu.py counts
// /dev/davinci? the same way).
#include "ptrun/placement/accelerators.hpp"
#include "sysfs_files.hpp"

namespace ptrun::placement {

std::optional<FoundDevices> find_ascend_npus(const std::filesystem::path& root) {
    FoundDevices found{env::DeviceKind::AscendNpu, {}, "/dev/davinci*"};
    // The driver's management node comes with every device node (containers mount it too): /dev
    // is listed only where it exists, not on every launch of every other machine.
    std::error_code ec;
    if (!std::filesystem::exists(root / "dev/davinci_manager", ec)) return std::nullopt;
    const auto nodes = detail::numbered(root / "dev", "davinci");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        found.devices.push_back(FoundDevice{static_cast<std::uint32_t>(i), {}, {}});
    }
    if (found.devices.empty()) return std::nullopt;
    return found;
}

}  // namespace ptrun::placement
