#include "ptrun/placement/apply_binding.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace ptrun::placement {
namespace {

// <linux/mempolicy.h> values; MPOL_PREFERRED_MANY arrived in Linux 5.15.
constexpr int kMpolPreferred = 1;
constexpr int kMpolPreferredMany = 5;
constexpr std::size_t kWordBits = sizeof(unsigned long) * CHAR_BIT;

std::vector<unsigned long> mask_of(const IdSet& ids) {
    std::vector<unsigned long> mask(
        ids.empty() ? 1 : static_cast<std::size_t>(ids.ids().back()) / kWordBits + 1);
    for (int id : ids.ids()) {
        auto bit = static_cast<std::size_t>(id);
        mask[bit / kWordBits] |= 1UL << (bit % kWordBits);
    }
    return mask;
}

/// A raw system call that leaves errno alone: returns 0 or the error number.
template <typename... Args>
int raw_call(long number, Args... args) noexcept {
    int saved = errno;
    long rc = ::syscall(number, args...);
    int error = rc < 0 ? errno : 0;
    errno = saved;
    return error;
}

}  // namespace

PreparedBinding prepare_binding(const WorkerBinding& binding) {
    PreparedBinding p;
    p.cpu_mask = mask_of(binding.cpus);
    if (!binding.mems.empty()) {
        p.node_mask = mask_of(binding.mems);
        // The kernel reads maxnode - 1 bits (numactl passes its mask size + 1 for this reason).
        p.node_bits = static_cast<unsigned long>(binding.mems.ids().back()) + 2;
        p.many_nodes = binding.mems.size() > 1;
    }
    return p;
}

BindingOutcome apply_binding(const PreparedBinding& p) noexcept {
    int error = raw_call(SYS_sched_setaffinity, 0, p.cpu_mask.size() * sizeof(unsigned long),
                         p.cpu_mask.data());
    if (error != 0) return {BindingStep::Affinity, error};
    if (p.node_mask.empty()) return {};
    if (p.many_nodes) {
        error = raw_call(SYS_set_mempolicy, kMpolPreferredMany, p.node_mask.data(), p.node_bits);
        if (error == 0) return {};
        if (error != EINVAL) return {BindingStep::MemoryPolicy, error};
    }
    // One node, or a kernel without MPOL_PREFERRED_MANY (EINVAL): MPOL_PREFERRED takes the
    // mask's first node (set_mempolicy(2)).
    error = raw_call(SYS_set_mempolicy, kMpolPreferred, p.node_mask.data(), p.node_bits);
    if (error != 0) return {BindingStep::MemoryPolicy, error};
    return {};
}

}  // namespace ptrun::placement
