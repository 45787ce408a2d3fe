#include "ptrun/placement/process_limits.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "ptrun/placement/placement_error.hpp"

namespace ptrun::placement {

std::optional<IdSet> mems_allowed(std::string_view proc_status) {
    constexpr std::string_view kKey = "Mems_allowed_list:";
    auto at = proc_status.find(kKey);
    if (at == std::string_view::npos) return std::nullopt;
    auto line = proc_status.substr(at + kKey.size());
    return parse_id_list(line.substr(0, line.find('\n')));
}

ProcessLimits read_process_limits() {
    ProcessLimits limits;
    // Sized for kMaxId CPUs: a fixed cpu_set_t stops at 1024.
    std::size_t bytes = (static_cast<std::size_t>(kMaxId) + 1) / 8;
    cpu_set_t* set = CPU_ALLOC(static_cast<std::size_t>(kMaxId) + 1);
    if (!set) throw PlacementError("sched_getaffinity: out of memory");
    CPU_ZERO_S(bytes, set);
    if (::sched_getaffinity(0, bytes, set) != 0) {
        int error = errno;
        CPU_FREE(set);
        throw PlacementError(std::string("sched_getaffinity: ") + std::strerror(error));
    }
    std::vector<int> ids;
    for (int i = 0; i <= kMaxId; ++i) {
        if (CPU_ISSET_S(static_cast<std::size_t>(i), bytes, set)) ids.push_back(i);
    }
    CPU_FREE(set);
    limits.cpus = IdSet(std::move(ids));
    std::ifstream status("/proc/self/status");
    std::stringstream text;
    text << status.rdbuf();
    limits.mems = mems_allowed(text.str());
    return limits;
}

}  // namespace ptrun::placement
