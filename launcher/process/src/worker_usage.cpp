#include "ptrun/launcher/process/worker_usage.hpp"

namespace ptrun::launcher {

WorkerUsage usage_from_rusage(const rusage& ru) {
    WorkerUsage u;
    const auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    u.cpu_seconds = seconds(ru.ru_utime) + seconds(ru.ru_stime);
    if (ru.ru_maxrss > 0) u.peak_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024U;
    return u;
}

}  // namespace ptrun::launcher
