#include "ptrun/placement/binding_plan.hpp"

#include <algorithm>
#include <map>

#include "ptrun/placement/placement_error.hpp"

namespace ptrun::placement {
namespace {

constexpr std::pair<BindingMode, std::string_view> kModes[] = {
    {BindingMode::Node, "node"},
    {BindingMode::Socket, "socket"},
    {BindingMode::Exclusive, "exclusive"},
    {BindingMode::CoreComplex, "core-complex"}};

/// Where a worker's device sits: its node, and its place among the devices on that node.
struct Home {
    int node = 0;
    int index = 0;  ///< among the devices of `node`, in order
    int count = 1;  ///< devices on `node`
};

std::string node_name(int node) { return "NUMA node " + std::to_string(node); }

IdSet allowed_on(const Topology& t, int node, const IdSet& allowed) {
    const NumaNode* n = t.node(node);
    return n ? n->cpus & allowed : IdSet{};
}

/// The nodes holding at least one allowed CPU, ascending.
std::vector<int> usable_nodes(const Topology& t, const IdSet& allowed) {
    std::vector<int> out;
    for (const auto& n : t.nodes) {
        if (!(n.cpus & allowed).empty()) out.push_back(n.id);
    }
    return out;
}

/// Fills index/count of `homes` from their nodes, in order.
void number_within_nodes(std::vector<Home>& homes) {
    std::map<int, int> seen;
    for (auto& h : homes) h.index = seen[h.node]++;
    for (auto& h : homes) h.count = seen[h.node];
}

std::vector<Home> gpu_homes(const Topology& t, const BindingRequest& r) {
    if (static_cast<std::size_t>(r.workers) > r.gpus.size()) {
        throw PlacementError("--numa-binding: " + std::to_string(r.workers) + " workers but " +
                             std::to_string(r.gpus.size()) +
                             (r.gpus.size() == 1 ? " GPU" : " GPUs") + ": worker " +
                             std::to_string(r.gpus.size()) + " has no GPU to bind near");
    }
    auto usable = usable_nodes(t, r.allowed_cpus);
    std::vector<Home> homes;
    for (const auto& gpu : r.gpus) {
        Home h;
        if (gpu.numa_node) {
            if (!t.node(*gpu.numa_node)) {
                throw PlacementError("--numa-binding: " + gpu.name + " is on " +
                                     node_name(*gpu.numa_node) +
                                     ", which is not online in this topology");
            }
            h.node = *gpu.numa_node;
        } else if (usable.size() == 1) {
            h.node = usable.front();  // one node: nothing else it could be near
        } else {
            throw PlacementError("--numa-binding: the kernel does not know the NUMA node of " +
                                 gpu.name + " (numa_node -1) and this process may use " +
                                 std::to_string(usable.size()) +
                                 " NUMA nodes: no node to bind near");
        }
        homes.push_back(h);
    }
    number_within_nodes(homes);
    homes.resize(static_cast<std::size_t>(r.workers));
    return homes;
}

std::vector<Home> cpu_homes(const Topology& t, const BindingRequest& r) {
    auto usable = usable_nodes(t, r.allowed_cpus);
    if (usable.empty()) {
        throw PlacementError("--numa-binding: no NUMA node holds a CPU this process may use (" +
                             to_list(r.allowed_cpus) + ")");
    }
    std::vector<Home> homes;
    auto n = static_cast<long>(usable.size());
    for (long w = 0; w < r.workers; ++w) {
        homes.push_back(Home{usable[static_cast<std::size_t>(w * n / r.workers)], 0, 1});
    }
    number_within_nodes(homes);
    return homes;
}

std::string who(const BindingRequest& r, int worker) {
    if (r.gpus.empty()) return "worker " + std::to_string(worker);
    return "worker " + std::to_string(worker) + " (" +
           r.gpus[static_cast<std::size_t>(worker)].name + ")";
}

IdSet node_cpus(const Topology& t, const BindingRequest& r, int worker, int node) {
    IdSet cpus = allowed_on(t, node, r.allowed_cpus);
    if (cpus.empty()) {
        throw PlacementError("--numa-binding: " + who(r, worker) + " belongs on " +
                             node_name(node) + ", which has no CPU this process may use (" +
                             to_list(r.allowed_cpus) + ")");
    }
    return cpus;
}

IdSet socket_cpus(const Topology& t, const BindingRequest& r, int worker, int node) {
    auto package_of = [&](const NumaNode& n) {
        return n.cpus.empty() ? -1 : t.cpu(n.cpus.front())->package;
    };
    int package = package_of(*t.node(node));
    IdSet cpus;
    for (const auto& n : t.nodes) {
        if (package >= 0 && package_of(n) == package) cpus = cpus | (n.cpus & r.allowed_cpus);
    }
    if (cpus.empty()) {
        throw PlacementError("--numa-binding socket: " + who(r, worker) +
                             " belongs on the socket of " + node_name(node) +
                             ", which has no CPU this process may use (" + to_list(r.allowed_cpus) +
                             ")");
    }
    return cpus;
}

/// `cpus` grouped by `key(cpu)`, each group ascending; groups ordered by their lowest CPU.
template <typename Key>
std::vector<IdSet> grouped(const Topology& t, const IdSet& cpus, Key key) {
    std::map<decltype(key(CpuInfo{})), std::vector<int>> groups;
    for (int id : cpus.ids()) groups[key(*t.cpu(id))].push_back(id);
    std::vector<IdSet> out;
    for (auto& [k, ids] : groups) out.emplace_back(std::move(ids));
    std::sort(out.begin(), out.end(),
              [](const IdSet& a, const IdSet& b) { return a.front() < b.front(); });
    return out;
}

IdSet exclusive_cpus(const Topology& t, const BindingRequest& r, int worker, const Home& h) {
    auto cores = grouped(t, node_cpus(t, r, worker, h.node),
                         [](const CpuInfo& c) { return std::pair(c.package, c.core); });
    auto n = static_cast<int>(cores.size());
    if (n < h.count) {
        throw PlacementError("--numa-binding exclusive: " + node_name(h.node) + " has " +
                             std::to_string(n) + " physical core" + (n == 1 ? "" : "s") +
                             " this process may use for " + std::to_string(h.count) +
                             (r.gpus.empty() ? " workers" : " GPUs") +
                             ": each needs one of its own");
    }
    int per = n / h.count;
    int extra = n % h.count;  // the first `extra` get one core more, as torchrun's do
    int start = h.index * per + std::min(h.index, extra);
    int len = per + (h.index < extra ? 1 : 0);
    IdSet cpus;
    for (int i = start; i < start + len; ++i) cpus = cpus | cores[static_cast<std::size_t>(i)];
    return cpus;
}

IdSet core_complex_cpus(const Topology& t, const BindingRequest& r, int worker, const Home& h) {
    IdSet cpus = node_cpus(t, r, worker, h.node);
    for (int id : cpus.ids()) {
        if (!t.cpu(id)->llc) {
            throw PlacementError(
                "--numa-binding core-complex: sysfs has no cache information for "
                "CPU " +
                std::to_string(id) + " (cpu" + std::to_string(id) +
                "/cache/index*): its core complex is unknown");
        }
    }
    auto complexes = grouped(t, cpus, [](const CpuInfo& c) { return *c.llc; });
    // Fullest complexes first, then lowest CPU: torchrun's order.
    std::stable_sort(complexes.begin(), complexes.end(),
                     [](const IdSet& a, const IdSet& b) { return a.size() > b.size(); });
    return complexes[static_cast<std::size_t>(h.index) % complexes.size()];
}

IdSet memory_nodes(const Topology& t, const BindingRequest& r, const IdSet& cpus) {
    std::vector<int> nodes;
    for (int id : cpus.ids()) {
        const CpuInfo* cpu = t.cpu(id);
        const NumaNode* node = cpu ? t.node(cpu->node) : nullptr;
        if (node && node->has_memory && (!r.allowed_mems || r.allowed_mems->contains(node->id))) {
            nodes.push_back(node->id);
        }
    }
    return IdSet(std::move(nodes));
}

}  // namespace

std::optional<BindingMode> parse_binding_mode(std::string_view text) {
    for (auto [mode, name] : kModes) {
        if (name == text) return mode;
    }
    return std::nullopt;
}

std::string to_text(BindingMode mode) {
    for (auto [m, name] : kModes) {
        if (m == mode) return std::string(name);
    }
    return "unknown";
}

std::vector<WorkerBinding> plan_bindings(const Topology& topology, const BindingRequest& request) {
    if (request.workers < 1) return {};
    auto homes = request.gpus.empty() ? cpu_homes(topology, request) : gpu_homes(topology, request);
    std::vector<WorkerBinding> out;
    for (int w = 0; w < request.workers; ++w) {
        const Home& h = homes[static_cast<std::size_t>(w)];
        WorkerBinding b;
        switch (request.mode) {
            case BindingMode::Node:
                b.cpus = node_cpus(topology, request, w, h.node);
                break;
            case BindingMode::Socket:
                b.cpus = socket_cpus(topology, request, w, h.node);
                break;
            case BindingMode::Exclusive:
                b.cpus = exclusive_cpus(topology, request, w, h);
                break;
            case BindingMode::CoreComplex:
                b.cpus = core_complex_cpus(topology, request, w, h);
                break;
        }
        b.mems = memory_nodes(topology, request, b.cpus);
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace ptrun::placement
