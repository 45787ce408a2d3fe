#include "ptrun/watchdog/stack_tool.hpp"

#include <sys/prctl.h>
#include <unistd.h>

namespace ptrun::watchdog {

std::optional<StackTool> find_stack_tool(std::string_view path_env) {
    for (auto kind : {StackToolKind::EuStack, StackToolKind::Gdb}) {
        std::size_t start = 0;
        while (start <= path_env.size()) {
            std::size_t end = path_env.find(':', start);
            if (end == std::string_view::npos) end = path_env.size();
            const std::string_view dir = path_env.substr(start, end - start);
            start = end + 1;
            if (dir.empty() || dir.front() != '/') continue;  // relative entries: never trusted
            const std::string candidate =
                std::string(dir) + "/" + std::string(stack_tool_name(kind));
            if (::access(candidate.c_str(), X_OK) == 0) return StackTool{kind, candidate};
        }
    }
    return std::nullopt;
}

std::vector<std::string> stack_command(const StackTool& tool, pid_t pid, int max_frames) {
    const std::string p = std::to_string(pid);
    const std::string n = std::to_string(max_frames);
    if (tool.kind == StackToolKind::EuStack) {
        // -m: the module of each frame (tells libc from the program); -s: source where known.
        return {tool.path, "-p", p, "-m", "-s", "-n", n};
    }
    return {tool.path,
            "-batch",
            "-nx",
            "-p",
            p,
            "-iex",
            "set debuginfod enabled off",
            "-iex",
            "set auto-load off",
            "-ex",
            "set pagination off",
            "-ex",
            "set print frame-arguments none",
            "-ex",
            "thread apply all bt " + n};
}

std::string_view stack_tool_name(StackToolKind kind) {
    return kind == StackToolKind::EuStack ? "eu-stack" : "gdb";
}

bool allow_stack_capture_by_parent() noexcept {
    return ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(::getppid()), 0, 0, 0) == 0;
}

}  // namespace ptrun::watchdog
