#include "ptrun/launcher/plan/host_facts.hpp"

#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "ptrun/env/cuda_devices.hpp"

namespace ptrun::launcher {

HostFacts read_host_facts(const env::EnvMap& env) {
    HostFacts h;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
    cpu_set_t set;
    CPU_ZERO(&set);
    h.cpu_count = ::sched_getaffinity(0, sizeof set, &set) == 0
                      ? CPU_COUNT(&set)
                      : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    // The driver's count, when a driver is loaded: CUDA ends a CUDA_VISIBLE_DEVICES list at the
    // first ordinal past it. Without one, CUDA_VISIBLE_DEVICES is taken as written.
    int physical = 0;
    std::error_code ec;
    bool driver = false;
    for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        driver = true;
        physical += 1;
    }
    h.gpus = env::visible_cuda_devices(env, physical);
    if (driver) h.gpus = env::limit_to_physical(std::move(h.gpus), physical);
    std::uint32_t words[2] = {static_cast<std::uint32_t>(::getpid()),
                              static_cast<std::uint32_t>(::time(nullptr))};
    [[maybe_unused]] auto got = ::getrandom(words, sizeof words, GRND_NONBLOCK);
    char id[17];
    std::snprintf(id, sizeof id, "%08x%08x", words[0], words[1]);
    h.random_id = id;
    return h;
}

}  // namespace ptrun::launcher
