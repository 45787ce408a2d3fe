#pragma once
/// The machine's CPUs, cores, core complexes and NUMA nodes, read from sysfs. Every read goes
/// through a root directory (normally /sys), so tests present recorded trees of other machines.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "ptrun/placement/id_set.hpp"

namespace ptrun::placement {

/// One online logical CPU.
struct CpuInfo {
    int id = 0;
    int package = 0;  ///< topology/physical_package_id: the socket
    int core = 0;     ///< topology/core_id: the physical core within its package
    int node = -1;    ///< the NUMA node whose cpulist holds it; -1 when none does
    /// Its last-level cache (the highest-level Data or Unified cache): that cache's `id` file,
    /// else the lowest CPU of its shared_cpu_list. CPUs with one value form a core complex.
    /// Empty when sysfs has no cache information.
    std::optional<int> llc;
    bool operator==(const CpuInfo&) const = default;
};

/// One online NUMA node.
struct NumaNode {
    int id = 0;
    IdSet cpus;                                 ///< nodeN/cpulist (online CPUs only)
    bool has_memory = true;                     ///< listed in node/has_memory
    std::optional<std::uint64_t> mem_total_kb;  ///< from nodeN/meminfo, when readable
    bool operator==(const NumaNode&) const = default;
};

struct Topology {
    std::vector<NumaNode> nodes;  ///< ascending id
    std::vector<CpuInfo> cpus;    ///< ascending id

    /// The CPU or node with `id`, or nullptr.
    const CpuInfo* cpu(int id) const;
    const NumaNode* node(int id) const;
};

/// Reads the topology under `sys` (a directory laid out like /sys): devices/system/cpu/online
/// and each CPU's topology/ and cache/index*/ files; devices/system/node/ (online, has_memory,
/// nodeN/cpulist, nodeN/meminfo, the last optional). A kernel without NUMA (no node directory)
/// reads as one node 0 holding every CPU; missing topology files read as package 0 and core =
/// CPU id. Blocks on file reads only. Throws PlacementError naming the file when one that must
/// be there is missing or malformed.
Topology read_topology(const std::filesystem::path& sys = "/sys");

/// The NUMA node of PCI device `bus_id` ("0000:3b:00.0", any case; an NVML-style
/// "00000000:3B:00.0" too) from bus/pci/devices/<bus id>/numa_node under `sys`: nullopt when
/// the kernel does not know it (-1, as on single-node and many virtual machines). Throws
/// PlacementError when the device is not there or the file is malformed.
std::optional<int> pci_numa_node(const std::filesystem::path& sys, std::string_view bus_id);

/// `bus_id` in sysfs form: four hex digits of domain, lower case ("0000:3b:00.0"). Throws
/// PlacementError when it is not DOMAIN:BUS:DEVICE.FUNCTION in hex.
std::string sysfs_bus_id(std::string_view bus_id);

}  // namespace ptrun::placement
