#include "ptrun/placement/gpu_locator.hpp"

#include <catch2/catch.hpp>

#include "ptrun/placement/placement_error.hpp"
#include "ptrun/placement/topology.hpp"
#include "recorded_machine.hpp"

using namespace ptrun::placement;
using ptrun::env::parse_cuda_visible_devices;
using ptrun::placement::test::FakeBusIds;
using ptrun::placement::test::RecordedMachine;

TEST_CASE("NVML loads only where the driver is, and says why not", "[placement][gpu]") {
    std::string why_not;
    auto nvml = open_nvml(why_not);
    if (!nvml) {
        // This machine has no NVIDIA driver: the real dlopen fails and nothing is left loaded.
        CHECK_THAT(why_not, Catch::StartsWith("cannot load libnvidia-ml.so.1: "));
        return;
    }
    WARN("NVML is present: mapping ordinal 0 through the real driver");
    auto bus = nvml->bus_id(ptrun::env::CudaDevice{"0", 0u});
    CHECK(sysfs_bus_id(bus) == bus);
    CHECK_NOTHROW(pci_numa_node("/sys", bus));
}

TEST_CASE("a library that is not NVML is refused by name", "[placement][gpu]") {
    std::string why_not;
    CHECK(open_nvml(why_not, "libc.so.6") == nullptr);
    CHECK(why_not == "NVML lacks nvmlInit_v2");
    CHECK(open_nvml(why_not, "/nonexistent/libnvidia-ml.so.1") == nullptr);
    CHECK_THAT(why_not, Catch::Contains("/nonexistent/libnvidia-ml.so.1"));
}

TEST_CASE("GPUs are located through the driver's bus ids and sysfs", "[placement][gpu]") {
    RecordedMachine m("dgx-h100");
    FakeBusIds driver(m);
    auto places = locate_gpus(parse_cuda_visible_devices("5,GPU-5b5e"), driver, m.sys());
    REQUIRE(places.size() == 1);  // "GPU-5b5e" is not an ordinal: the list ends there
    CHECK(places[0].name == "GPU 5 (0000:ab:00.0)");
    CHECK(places[0].numa_node == 1);

    places = locate_gpus(parse_cuda_visible_devices("GPU-5b5e,GPU-7e9a1c3d"), driver, m.sys());
    REQUIRE(places.size() == 2);
    CHECK(places[0].name == "GPU GPU-5b5e (0000:18:00.0)");
    CHECK(places[0].numa_node == 0);
    CHECK(places[1].numa_node == 1);
    CHECK_THROWS_WITH(locate_gpus(parse_cuda_visible_devices("9"), driver, m.sys()),
                      "fake driver: no GPU '9'");
}

TEST_CASE("a GPU whose PCI device has no NUMA node is located on none", "[placement][gpu]") {
    RecordedMachine m("this-vm");
    FakeBusIds driver(m);
    auto places = locate_gpus(m.gpus(), driver, m.sys());
    REQUIRE(places.size() == 1);
    CHECK_FALSE(places[0].numa_node);
}
