#pragma once
/// clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP): a vfork-style child created directly inside
/// a cgroup. Joining a cgroup after the fact (writing cgroup.procs) takes the cgroup threadgroup
/// lock for writing, which waits for an RCU grace period: milliseconds on a loaded machine, per
/// worker; created inside, the child takes only the read side. glibc has no clone3 wrapper that
/// runs a function on a new stack, so the x86-64 entry is a few lines of assembly.

#include <cstddef>

namespace ptrun::launcher {

/// Runs `fn(arg)` in a child that shares this process's memory until it execs or exits (the
/// caller is suspended until then), on `stack` (`stack_size` bytes, 16-byte aligned top), created
/// in the cgroup whose directory `cgroup_fd` is open on; SIGCHLD at exit. The child's pid, or
/// -errno: -ENOSYS where not supported (not x86-64, Linux < 5.3), -EINVAL before Linux 5.7.
long clone_vfork_into_cgroup(int cgroup_fd, char* stack, std::size_t stack_size, int (*fn)(void*),
                             void* arg);

}  // namespace ptrun::launcher
