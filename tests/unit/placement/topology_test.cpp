#include "ptrun/placement/topology.hpp"

#include <catch2/catch.hpp>
#include <set>

#include "ptrun/placement/placement_error.hpp"
#include "recorded_machine.hpp"

using namespace ptrun::placement;
using ptrun::placement::test::RecordedMachine;

namespace {

std::set<int> distinct(const Topology& t, int CpuInfo::*field) {
    std::set<int> out;
    for (const auto& c : t.cpus) out.insert(c.*field);
    return out;
}

}  // namespace

TEST_CASE("topology: a two-socket Intel box", "[placement][topology]") {
    RecordedMachine m("intel-2s");
    auto t = read_topology(m.sys());
    REQUIRE(t.cpus.size() == 80);
    REQUIRE(t.nodes.size() == 2);
    CHECK(to_list(t.nodes[0].cpus) == "0-19,40-59");
    CHECK(t.nodes[1].mem_total_kb == 196608000u);
    CHECK(t.nodes[1].has_memory);
    CHECK(distinct(t, &CpuInfo::package) == std::set<int>{0, 1});
    CHECK(*t.cpu(45) == CpuInfo{45, 0, 8, 0, 0});  // sibling of CPU 5: core 8 of socket 0
    CHECK(t.cpu(65)->llc == 1);
    CHECK(t.cpu(80) == nullptr);
}

TEST_CASE("topology: core complexes of an AMD EPYC come from the L3 ids", "[placement][topology]") {
    RecordedMachine m("epyc-2s");
    auto t = read_topology(m.sys());
    std::set<int> l3;
    for (const auto& c : t.cpus) l3.insert(*c.llc);
    CHECK(l3 == std::set<int>{0, 1, 2, 3, 8, 9, 10, 11});
    CHECK(t.cpu(36)->llc == 1);
    CHECK(t.cpu(36)->core == 8);
}

TEST_CASE("topology: no NUMA and no cache information", "[placement][topology]") {
    RecordedMachine m("no-numa-no-cache");
    auto t = read_topology(m.sys());
    REQUIRE(t.nodes.size() == 1);
    CHECK(to_list(t.nodes[0].cpus) == "0-3");
    CHECK(t.cpu(2)->node == 0);
    CHECK_FALSE(t.cpu(2)->llc);
}

TEST_CASE("topology: the recorded tree of this machine", "[placement][topology]") {
    RecordedMachine m("this-vm");
    auto t = read_topology(m.sys());
    REQUIRE(t.cpus.size() == 2);
    CHECK(t.cpu(1)->llc == 0);
    CHECK(pci_numa_node(m.sys(), "0000:00:04.0") == std::nullopt);
}

TEST_CASE("topology: the live /sys reads, every online CPU in a node", "[placement][topology]") {
    auto t = read_topology();
    REQUIRE_FALSE(t.cpus.empty());
    REQUIRE_FALSE(t.nodes.empty());
    for (const auto& c : t.cpus) {
        INFO("cpu " << c.id);
        CHECK(c.node >= 0);
    }
}

TEST_CASE("topology: a GPU's NUMA node comes from its PCI device", "[placement][topology]") {
    RecordedMachine m("dgx-h100");
    CHECK(pci_numa_node(m.sys(), "0000:2a:00.0") == 0);
    CHECK(pci_numa_node(m.sys(), "00000000:9A:00.0") == 1);  // as NVML writes it
    CHECK_THROWS_WITH(pci_numa_node(m.sys(), "0000:77:00.0"), Catch::Contains("0000:77:00.0"));
}

TEST_CASE("topology: PCI bus ids in sysfs form", "[placement][topology]") {
    CHECK(sysfs_bus_id("00000000:3B:00.0") == "0000:3b:00.0");
    CHECK(sysfs_bus_id("0000:db:00.0") == "0000:db:00.0");
    CHECK(sysfs_bus_id("0001:0a:1f.7") == "0001:0a:1f.7");
    CHECK_THROWS_WITH(sysfs_bus_id("3b:00.0"), Catch::Contains("expected DOMAIN:BUS:DEVICE"));
    CHECK_THROWS_AS(sysfs_bus_id("0000:3g:00.0"), PlacementError);
    CHECK_THROWS_AS(sysfs_bus_id("0000:3b:00.9"), PlacementError);
}

TEST_CASE("topology: a missing or malformed file is named", "[placement][topology]") {
    CHECK_THROWS_WITH(read_topology("/nonexistent-sys"),
                      Catch::Contains("/nonexistent-sys/devices/system/cpu/online"));
}
