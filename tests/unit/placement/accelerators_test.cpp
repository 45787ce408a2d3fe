#include "ptrun/placement/accelerators.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "../launcher/temp_dir.hpp"
#include "ptrun/env/device_kind.hpp"
#include "ptrun/placement/placement_error.hpp"

using namespace ptrun::placement;
using ptrun::env::DeviceKind;

namespace {

/// A recorded device tree (topologies/devices/NAME, each with a README citing its sources).
std::filesystem::path root(const std::string& name) {
    return std::filesystem::path(PTRUN_TOPOLOGY_DIR) / "devices" / name;
}

std::vector<std::string> buses(const FoundDevices& f) {
    std::vector<std::string> out;
    for (const auto& d : f.devices) out.push_back(d.bus);
    return out;
}

}  // namespace

TEST_CASE("AMD GPUs are the kfd nodes with SIMDs, their bus from domain and location_id",
          "[placement][devices]") {
    auto found = find_amd_gpus(root("amd-mi300x"));
    REQUIRE(found);
    CHECK(found->kind == DeviceKind::AmdGpu);
    CHECK(found->source == "/sys/class/kfd/kfd/topology");
    CHECK(found->ids() == std::vector<std::uint32_t>{0, 1, 2, 3});
    CHECK(buses(*found) ==
          std::vector<std::string>{"0000:0c:00.0", "0000:22:00.0", "0000:8a:00.0", "0000:aa:00.0"});
    CHECK(found->devices[0].uuid == "GPU-9b3c1f2a77d04e61");
    CHECK_FALSE(find_nvidia_gpus(root("amd-mi300x")));
}

TEST_CASE("Intel GPUs are i915/xe render nodes, one device per xe tile, in PCI order",
          "[placement][devices]") {
    auto found = find_intel_gpus(root("intel-max1550"));
    REQUIRE(found);
    CHECK(found->source == "/sys/class/drm");
    CHECK(buses(*found) ==
          std::vector<std::string>{"0000:29:00.0", "0000:29:00.0", "0000:9a:00.0", "0000:9a:00.0"});
    // The AMD card among the render nodes is not an xpu, and there is no kfd for it.
    CHECK_FALSE(find_amd_gpus(root("intel-max1550")));
}

TEST_CASE("Gaudis are habanalabs accel devices named by module id", "[placement][devices]") {
    auto found = find_gaudis(root("gaudi2"));
    REQUIRE(found);
    CHECK(found->source == "/sys/class/accel");
    CHECK(found->ids() == std::vector<std::uint32_t>{0, 1, 2, 3});
    CHECK(buses(*found) ==
          std::vector<std::string>{"0000:34:00.0", "0000:9b:00.0", "0000:33:00.0", "0000:9a:00.0"});
}

TEST_CASE("Ascend NPUs are the /dev/davinciN nodes, not davinci_manager", "[placement][devices]") {
    auto found = find_ascend_npus(root("ascend-910b"));
    REQUIRE(found);
    CHECK(found->source == "/dev/davinci*");
    CHECK(found->devices.size() == 8);
    std::string why;
    CHECK_FALSE(found_bus_ids(*found, why));
    CHECK(why == "Ascend NPU 0 has no PCI address in /dev/davinci*");
}

TEST_CASE("Ascend NPUs: davinciN nodes without the driver's davinci_manager are not NPUs",
          "[placement][devices]") {
    ptrun::launcher::test::TempDir dir;
    std::filesystem::create_directories(dir.path / "dev");
    std::ofstream(dir.path / "dev/davinci0").put('\n');
    CHECK_FALSE(find_ascend_npus(dir.path));
    std::ofstream(dir.path / "dev/davinci_manager").put('\n');
    REQUIRE(find_ascend_npus(dir.path));
    CHECK(find_ascend_npus(dir.path)->devices.size() == 1);
}

TEST_CASE("find_accelerators lists every kind found, in auto's order", "[placement][devices]") {
    auto all = find_accelerators(root("nvidia-and-amd"));
    REQUIRE(all.size() == 2);
    CHECK(all[0].kind == DeviceKind::NvidiaGpu);
    CHECK(all[0].source == "/proc/driver/nvidia/gpus");
    CHECK(buses(all[0]) == std::vector<std::string>{"0000:18:00.0", "0000:2a:00.0"});
    CHECK(all[1].kind == DeviceKind::AmdGpu);
    CHECK(buses(all[1]) == std::vector<std::string>{"0000:c1:00.0"});
    CHECK(find_accelerators(root("does-not-exist")).empty());
}

TEST_CASE("found devices are placed on the NUMA node of their PCI address",
          "[placement][devices]") {
    auto gaudis = find_gaudis(root("gaudi2"));
    REQUIRE(gaudis);
    std::string why;
    auto ids = found_bus_ids(*gaudis, why);
    REQUIRE(ids);
    auto visible = ptrun::env::parse_visible_devices(DeviceKind::Gaudi, "2,1");
    auto places = locate_gpus(visible, *ids, root("gaudi2") / "sys");
    REQUIRE(places.size() == 2);
    CHECK(places[0].name == "GPU 2 (0000:33:00.0)");
    CHECK(places[0].numa_node == 0);
    CHECK(places[1].numa_node == 1);
    auto intel = find_intel_gpus(root("intel-max1550"));
    auto intel_ids = found_bus_ids(*intel, why);
    REQUIRE(intel_ids);
    CHECK(intel_ids->bus_id(ptrun::env::CudaDevice{"3", 3u}) == "0000:9a:00.0");
    CHECK_THROWS_WITH(intel_ids->bus_id(ptrun::env::CudaDevice{"1.0", 1u}),
                      "no Intel GPU '1.0' among the 4 in /sys/class/drm");
}
