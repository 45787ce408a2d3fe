#pragma once
/// Which CPUs and memory nodes each local worker gets under --numa-binding: pure, from the
/// topology, the CPUs ptrun itself may use, and the GPUs the workers see. The modes mean what
/// torchrun 2.x's do (torch/numa/binding.py), read from the same sysfs facts, computed once in
/// the launcher instead of per worker, and bound inside ptrun's own CPU set, never outside it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/placement/id_set.hpp"
#include "ptrun/placement/topology.hpp"

namespace ptrun::placement {

enum class BindingMode {
    Node,         ///< every allowed CPU of the NUMA node of the worker's GPU
    Socket,       ///< every allowed CPU of every NUMA node of that GPU's socket
    Exclusive,    ///< that node's allowed physical cores, split evenly among its GPUs
    CoreComplex,  ///< one core complex (CPUs sharing a last-level cache) of that node per GPU
};

/// "node", "socket", "exclusive", "core-complex"; nullopt for anything else.
std::optional<BindingMode> parse_binding_mode(std::string_view text);
std::string to_text(BindingMode mode);

/// A device the workers see, as the planner needs it.
struct GpuPlace {
    std::string name;              ///< for messages: "GPU 2 (0000:3b:00.0)"
    std::optional<int> numa_node;  ///< from its PCI device; nullopt when the kernel does not know
};

struct BindingRequest {
    BindingMode mode = BindingMode::Node;
    int workers = 0;  ///< local workers, in local rank order
    /// The devices the workers see, in CUDA order: worker i uses gpus[i], and the GPUs of one
    /// NUMA node share its CPUs in this order (torchrun's division, by visible device). Empty
    /// for CPU-only workers: then worker i stands for a device of its own, and the workers are
    /// spread over the nodes with allowed CPUs in contiguous blocks (2 workers on 4 nodes: nodes
    /// 0 and 2).
    std::vector<GpuPlace> gpus;
    IdSet allowed_cpus;                 ///< ptrun's own affinity (cgroup, --cpu-bind, taskset)
    std::optional<IdSet> allowed_mems;  ///< ptrun's Mems_allowed; nullopt when unknown
};

/// Where one worker runs.
struct WorkerBinding {
    IdSet cpus;  ///< its affinity: never empty, always inside BindingRequest::allowed_cpus
    /// NUMA nodes its memory is preferred on: the nodes of its CPUs that have memory and are in
    /// allowed_mems; empty leaves the memory policy alone.
    IdSet mems;
    bool operator==(const WorkerBinding&) const = default;
};

/// One binding per worker, in local rank order. Throws PlacementError naming the worker, GPU or
/// node when a binding cannot be made: more workers than GPUs, a GPU whose NUMA node is unknown
/// on a machine with several, a node with no allowed CPU, fewer allowed physical cores than GPUs
/// on a node (exclusive), a node without cache information (core-complex).
std::vector<WorkerBinding> plan_bindings(const Topology& topology, const BindingRequest& request);

}  // namespace ptrun::placement
