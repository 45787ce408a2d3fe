#include "ptrun/launcher/plan/host_facts.hpp"

#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/env/device_kind.hpp"

namespace ptrun::launcher {
namespace {

bool same_uuid(const std::string& found, const std::string& named) {
    // ROCR takes a UUID with any case of hex digits.
    return !found.empty() && found.size() == named.size() &&
           std::equal(found.begin(), found.end(), named.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           });
}

}  // namespace

placement::FoundDevices after_rocr(placement::FoundDevices found, const env::EnvMap& env) {
    auto rocr = env::parse_rocr_visible_devices(env);
    if (!rocr) return found;
    std::vector<placement::FoundDevice> kept;
    for (const auto& named : *rocr) {
        auto it = std::find_if(found.devices.begin(), found.devices.end(), [&](const auto& d) {
            return named.ordinal ? d.id == *named.ordinal : same_uuid(d.uuid, named.id);
        });
        if (it == found.devices.end()) break;
        kept.push_back(*it);
        kept.back().id = static_cast<std::uint32_t>(kept.size() - 1);
    }
    found.devices = std::move(kept);
    return found;
}

HostFacts any_host_facts() {
    HostFacts h;
    h.cpu_count = env::kMaxCudaDevices;
    h.local_files = false;
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(env::kMaxCudaDevices); ++i)
        h.gpus.push_back({std::to_string(i), i});
    for (auto kind : env::kDeviceKinds) {
        HostDevices devices;
        devices.found.kind = kind;
        devices.found.source = "any host";
        devices.visible = h.gpus;
        h.accelerators.push_back(std::move(devices));
    }
    return h;
}

HostFacts read_host_facts(const env::EnvMap& env) {
    HostFacts h;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
    cpu_set_t set;
    CPU_ZERO(&set);
    h.cpu_count = ::sched_getaffinity(0, sizeof set, &set) == 0
                      ? CPU_COUNT(&set)
                      : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    if (auto root = env::lookup(env, "PTRUN_DEVICE_ROOT"); root && !root->empty())
        h.device_root = *root;
    for (auto& found : placement::find_accelerators(h.device_root)) {
        if (found.kind == env::DeviceKind::AmdGpu) found = after_rocr(std::move(found), env);
        auto visible = env::visible_devices(found.kind, env, found.ids());
        h.accelerators.push_back(HostDevices{std::move(found), std::move(visible)});
    }
    // NVIDIA: the driver's count, when a driver is loaded: CUDA ends a CUDA_VISIBLE_DEVICES list
    // at the first ordinal past it. Without one, CUDA_VISIBLE_DEVICES is taken as written, unless
    // AMD GPUs are there: then HIP, which reads it too, decides.
    const auto of_kind = [&h](env::DeviceKind kind) {
        return std::find_if(h.accelerators.begin(), h.accelerators.end(),
                            [kind](const auto& a) { return a.found.kind == kind; });
    };
    const auto nvidia = of_kind(env::DeviceKind::NvidiaGpu);
    const auto amd = of_kind(env::DeviceKind::AmdGpu);
    if (nvidia == h.accelerators.end() && amd != h.accelerators.end()) {
        h.gpu_kind = env::DeviceKind::AmdGpu;
        h.gpus = amd->visible;
    } else if (nvidia == h.accelerators.end()) {
        h.gpus = env::visible_cuda_devices(env, 0);
    } else {
        const int physical = static_cast<int>(nvidia->found.devices.size());
        h.gpus = env::limit_to_physical(env::visible_cuda_devices(env, physical), physical);
    }
    std::uint32_t words[2] = {static_cast<std::uint32_t>(::getpid()),
                              static_cast<std::uint32_t>(::time(nullptr))};
    [[maybe_unused]] auto got = ::getrandom(words, sizeof words, GRND_NONBLOCK);
    char id[17];
    std::snprintf(id, sizeof id, "%08x%08x", words[0], words[1]);
    h.random_id = id;
    return h;
}

std::vector<env::CudaDevice> host_devices(const HostFacts& host, env::DeviceKind kind) {
    if (kind == host.gpu_kind) return host.gpus;
    for (const auto& a : host.accelerators) {
        if (a.found.kind == kind) return a.visible;
    }
    return {};
}

ExplainRow explain_devices_row(const HostFacts& host) {
    std::string value;
    for (const auto& a : host.accelerators) {
        if (!value.empty()) value += "; ";
        const auto n = a.found.devices.size();
        value += std::to_string(n) + " " + std::string(env::device_noun(a.found.kind)) +
                 (n == 1 ? "" : "s") + " (from " + a.found.source + ")";
    }
    bool amd = std::any_of(host.accelerators.begin(), host.accelerators.end(),
                           [](const auto& a) { return a.found.kind == env::DeviceKind::AmdGpu; });
    if (amd && host.gpu_kind == env::DeviceKind::NvidiaGpu)
        value += "; gpu and auto count the NVIDIA GPUs, leaving the AMD GPUs aside";
    std::string from = host.device_root == "/"
                           ? std::string("this node")
                           : "this node, read under PTRUN_DEVICE_ROOT=" + host.device_root.string();
    if (value.empty()) {
        value = "none";
        from +=
            ": looked in /proc/driver/nvidia/gpus, /sys/class/kfd, /sys/class/drm, "
            "/sys/class/accel, /dev";
    }
    return {"accelerators", value, from};
}

}  // namespace ptrun::launcher
