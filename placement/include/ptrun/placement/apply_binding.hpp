#pragma once
/// Putting a worker where its WorkerBinding says, in the child between clone() and exec: the
/// launcher prepares the masks (which allocates) before clone(); apply_binding() then makes two
/// raw system calls, allocates nothing and touches no shared state, so it is safe in the
/// CLONE_VM | CLONE_VFORK child of launcher/src/spawn.cpp. Both settings survive exec.

#include <cstddef>
#include <vector>

#include "ptrun/placement/binding_plan.hpp"

namespace ptrun::placement {

/// A WorkerBinding as the kernel takes it.
struct PreparedBinding {
    std::vector<unsigned long> cpu_mask;   ///< sched_setaffinity's bit mask; never empty
    std::vector<unsigned long> node_mask;  ///< set_mempolicy's; empty leaves the policy alone
    unsigned long node_bits = 0;           ///< how many bits of node_mask the kernel reads
    bool many_nodes = false;               ///< more than one node: MPOL_PREFERRED_MANY
};

/// The masks for `binding` (allocates: call it before clone()).
PreparedBinding prepare_binding(const WorkerBinding& binding);

/// What apply_binding() did not manage.
enum class BindingStep { None, Affinity, MemoryPolicy };

struct BindingOutcome {
    BindingStep failed = BindingStep::None;
    int error = 0;  ///< errno of the failed call
};

/// Binds the calling thread (in the child: the whole process-to-be): sched_setaffinity to the
/// CPUs, then set_mempolicy preferring the nodes (MPOL_PREFERRED_MANY for several, falling back
/// to MPOL_PREFERRED on the first one on kernels before 5.15). Async-signal-safe: raw syscalls
/// only, no allocation, errno untouched. Reports the first call that failed.
BindingOutcome apply_binding(const PreparedBinding& prepared) noexcept;

}  // namespace ptrun::placement
