#pragma once
/// Which program prints a worker's native stacks, found at run time (both are optional
/// packages): eu-stack (elfutils; fast, no debugger start-up), else gdb in batch mode. Both
/// attach with ptrace: they need the same user as the worker and, where Yama's ptrace_scope is 1,
/// the worker's permission (allow_stack_capture_by_parent below, called in the worker between
/// fork and exec).

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::watchdog {

enum class StackToolKind { EuStack, Gdb };

struct StackTool {
    StackToolKind kind = StackToolKind::EuStack;
    std::string path;  ///< absolute path of the executable
    bool operator==(const StackTool&) const = default;
};

/// The first executable eu-stack, else gdb, in the directories of `path_env` (a PATH value);
/// nullopt when neither is there. Touches the file system (access(X_OK)), nothing else.
std::optional<StackTool> find_stack_tool(std::string_view path_env);

/// The command that prints every thread's stack of `pid` (at most `max_frames` per thread) and
/// then detaches, leaving the process as it was.
std::vector<std::string> stack_command(const StackTool& tool, pid_t pid, int max_frames = 64);

/// "eu-stack" or "gdb".
std::string_view stack_tool_name(StackToolKind kind);

/// For the worker's side of spawn (after fork, before exec; async-signal-safe): lets the
/// launcher (the worker's parent) and its descendants, i.e. the stack tool it starts, attach
/// where Yama restricts ptrace to ancestors (ptrace_scope 1). Returns false where the kernel
/// has no Yama (nothing to allow).
bool allow_stack_capture_by_parent() noexcept;

}  // namespace ptrun::watchdog
