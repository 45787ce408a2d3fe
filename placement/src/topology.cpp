#include "ptrun/placement/topology.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "ptrun/placement/placement_error.hpp"

namespace ptrun::placement {
namespace {

namespace fs = std::filesystem;

/// Sysfs files are a page at most; anything longer is not one.
constexpr std::size_t kMaxFile = 64 * 1024;

std::optional<std::string> read_optional(const fs::path& file) {
    std::ifstream in(file);
    if (!in) return std::nullopt;
    std::string text(kMaxFile + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFile) throw PlacementError(file.string() + ": longer than a sysfs file");
    return text;
}

std::string read_required(const fs::path& file) {
    auto text = read_optional(file);
    if (!text) throw PlacementError(file.string() + ": cannot be read");
    return *text;
}

std::optional<int> int_in(const fs::path& file) {
    auto text = read_optional(file);
    if (!text) return std::nullopt;
    std::string_view v(*text);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    int value = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size()) {
        throw PlacementError(file.string() + ": '" + std::string(v) + "' is not an integer");
    }
    return value;
}

IdSet list_in(const fs::path& file) {
    try {
        return parse_id_list(read_required(file));
    } catch (const PlacementError& e) {
        throw PlacementError(file.string() + ": " + e.what());
    }
}

std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
}

/// The last-level cache of the CPU whose directory is `cpu_dir`, as CpuInfo::llc describes.
std::optional<int> last_level_cache(const fs::path& cpu_dir) {
    std::error_code ec;
    int best_level = -1;
    std::optional<int> best;
    for (const auto& entry : fs::directory_iterator(cpu_dir / "cache", ec)) {
        auto name = entry.path().filename().string();
        if (name.rfind("index", 0) != 0) continue;
        auto type = read_optional(entry.path() / "type");
        if (!type || (trimmed(*type) != "Unified" && trimmed(*type) != "Data")) continue;
        auto level = int_in(entry.path() / "level");
        if (!level || *level <= best_level) continue;
        best_level = *level;
        if (auto id = int_in(entry.path() / "id")) {
            best = id;
        } else {
            auto shared = list_in(entry.path() / "shared_cpu_list");
            best = shared.empty() ? std::nullopt : std::optional<int>(shared.front());
        }
    }
    return best;
}

std::optional<std::uint64_t> mem_total_kb(const fs::path& meminfo) {
    auto text = read_optional(meminfo);
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        auto at = line.find("MemTotal:");
        if (at == std::string::npos) continue;
        std::istringstream value(line.substr(at + 9));
        std::uint64_t kb = 0;
        if (value >> kb) return kb;
    }
    return std::nullopt;
}

std::vector<NumaNode> read_nodes(const fs::path& node_dir, const IdSet& online_cpus) {
    std::vector<NumaNode> nodes;
    if (!fs::is_directory(node_dir)) {
        nodes.push_back(NumaNode{0, online_cpus, true, std::nullopt});
        return nodes;
    }
    IdSet with_memory;
    bool memory_known = fs::exists(node_dir / "has_memory");
    if (memory_known) with_memory = list_in(node_dir / "has_memory");
    const IdSet online_nodes = list_in(node_dir / "online");
    for (int id : online_nodes.ids()) {
        auto dir = node_dir / ("node" + std::to_string(id));
        NumaNode node;
        node.id = id;
        node.cpus = list_in(dir / "cpulist") & online_cpus;
        node.mem_total_kb = mem_total_kb(dir / "meminfo");
        node.has_memory =
            memory_known ? with_memory.contains(id) : node.mem_total_kb.value_or(1) > 0;
        nodes.push_back(std::move(node));
    }
    return nodes;
}

int hex_field(std::string_view text, std::string_view whole) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value > 0xffff) {
        throw PlacementError("PCI bus id '" + std::string(whole) +
                             "': expected DOMAIN:BUS:DEVICE.FUNCTION in hex");
    }
    return static_cast<int>(value);
}

}  // namespace

const CpuInfo* Topology::cpu(int id) const {
    // Ascending ids: a binary search, as planning asks for every CPU of a node per worker.
    auto it = std::lower_bound(cpus.begin(), cpus.end(), id,
                               [](const CpuInfo& c, int wanted) { return c.id < wanted; });
    return it == cpus.end() || it->id != id ? nullptr : &*it;
}

const NumaNode* Topology::node(int id) const {
    auto it =
        std::find_if(nodes.begin(), nodes.end(), [&](const NumaNode& n) { return n.id == id; });
    return it == nodes.end() ? nullptr : &*it;
}

Topology read_topology(const fs::path& sys) {
    const auto cpu_dir = sys / "devices/system/cpu";
    Topology topo;
    IdSet online = list_in(cpu_dir / "online");
    topo.nodes = read_nodes(sys / "devices/system/node", online);
    for (int id : online.ids()) {
        auto dir = cpu_dir / ("cpu" + std::to_string(id));
        CpuInfo cpu;
        cpu.id = id;
        cpu.package = std::max(0, int_in(dir / "topology/physical_package_id").value_or(0));
        cpu.core = int_in(dir / "topology/core_id").value_or(id);
        for (const auto& node : topo.nodes) {
            if (node.cpus.contains(id)) cpu.node = node.id;
        }
        cpu.llc = last_level_cache(dir);
        topo.cpus.push_back(cpu);
    }
    return topo;
}

std::string sysfs_bus_id(std::string_view bus_id) {
    auto colon1 = bus_id.find(':');
    auto colon2 = bus_id.find(':', colon1 == std::string_view::npos ? 0 : colon1 + 1);
    auto dot = bus_id.find('.', colon2 == std::string_view::npos ? 0 : colon2 + 1);
    if (colon1 == std::string_view::npos || colon2 == std::string_view::npos ||
        dot == std::string_view::npos) {
        throw PlacementError("PCI bus id '" + std::string(bus_id) +
                             "': expected DOMAIN:BUS:DEVICE.FUNCTION in hex");
    }
    auto domain_text = bus_id.substr(0, colon1);
    // NVML writes eight digits of domain; only the low 16 bits exist on Linux.
    if (domain_text.size() > 4 && domain_text.find_first_not_of('0') >= domain_text.size() - 4) {
        domain_text.remove_prefix(domain_text.size() - 4);
    }
    int domain = hex_field(domain_text, bus_id);
    int bus = hex_field(bus_id.substr(colon1 + 1, colon2 - colon1 - 1), bus_id);
    int device = hex_field(bus_id.substr(colon2 + 1, dot - colon2 - 1), bus_id);
    int function = hex_field(bus_id.substr(dot + 1), bus_id);
    if (bus > 0xff || device > 0x1f || function > 7) {
        throw PlacementError("PCI bus id '" + std::string(bus_id) + "': out of range");
    }
    char text[16];
    std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus, device, function);
    return text;
}

std::optional<int> pci_numa_node(const fs::path& sys, std::string_view bus_id) {
    auto file = sys / "bus/pci/devices" / sysfs_bus_id(bus_id) / "numa_node";
    auto node = int_in(file);
    if (!node) throw PlacementError(file.string() + ": cannot be read (no such PCI device?)");
    if (*node < 0) return std::nullopt;
    return node;
}

}  // namespace ptrun::placement
