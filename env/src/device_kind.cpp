#include "ptrun/env/device_kind.hpp"

#include <algorithm>
#include <set>

namespace ptrun::env {
namespace {

struct KindFacts {
    std::string_view torch;
    std::string_view noun;
    std::string_view variable;
};

const KindFacts& facts(DeviceKind kind) {
    // Sources: CUDA C Programming Guide, "CUDA Environment Variables"; ROCm "GPU isolation
    // techniques" (rocm.docs.amd.com, conceptual/gpu-isolation.html); Level Zero specification,
    // "Affinity Mask" (oneapi-src.github.io/level-zero-spec, core/PROG.html); Intel Gaudi
    // "Multiple Tenants on HPU" (docs.habana.ai, Orchestration/Multiple_Tenants_on_HPU); CANN
    // "ASCEND_RT_VISIBLE_DEVICES" (hiascend.com, envvar/envref_07_0028.html).
    static const KindFacts kFacts[] = {
        {"gpu", "NVIDIA GPU", "CUDA_VISIBLE_DEVICES"},
        {"gpu", "AMD GPU", "HIP_VISIBLE_DEVICES"},
        {"xpu", "Intel GPU", "ZE_AFFINITY_MASK"},
        {"hpu", "Gaudi", "HABANA_VISIBLE_MODULES"},
        {"npu", "Ascend NPU", "ASCEND_RT_VISIBLE_DEVICES"},
    };
    return kFacts[static_cast<int>(kind)];
}

/// A decimal number of digits only, below kMaxCudaDevices; nullopt otherwise.
std::optional<std::uint32_t> strict_id(std::string_view text) {
    if (text.empty() || text.size() > 4) return std::nullopt;
    std::uint32_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (value >= static_cast<std::uint32_t>(kMaxCudaDevices)) return std::nullopt;
    return value;
}

/// Intel's "N" or "N.M", Gaudi's and Ascend's "N": the device, or nullopt when malformed.
std::optional<CudaDevice> strict_entry(DeviceKind kind, std::string_view entry) {
    auto dot = kind == DeviceKind::IntelGpu ? entry.find('.') : std::string_view::npos;
    auto root = strict_id(entry.substr(0, dot));
    if (!root) return std::nullopt;
    if (dot == std::string_view::npos) return CudaDevice{std::to_string(*root), root};
    auto sub = strict_id(entry.substr(dot + 1));
    if (!sub) return std::nullopt;
    // A sub-device has no index of its own among the visible devices: it is placed by its root.
    return CudaDevice{std::to_string(*root) + "." + std::to_string(*sub), root};
}

}  // namespace

std::string_view torch_name(DeviceKind kind) { return facts(kind).torch; }
std::string_view device_noun(DeviceKind kind) { return facts(kind).noun; }
std::string_view visibility_variable(DeviceKind kind) { return facts(kind).variable; }

std::optional<std::string> visibility_variable_set(DeviceKind kind, const EnvMap& env) {
    std::string own(visibility_variable(kind));
    if (lookup(env, own)) return own;
    if (kind == DeviceKind::AmdGpu && lookup(env, "CUDA_VISIBLE_DEVICES"))
        return "CUDA_VISIBLE_DEVICES";
    return std::nullopt;
}

std::vector<CudaDevice> parse_visible_devices(DeviceKind kind, std::string_view value) {
    if (kind == DeviceKind::NvidiaGpu || kind == DeviceKind::AmdGpu)
        return parse_cuda_visible_devices(value);
    std::vector<CudaDevice> devices;
    std::set<std::string> seen;
    while (!value.empty()) {
        auto comma = value.find(',');
        auto device = strict_entry(kind, value.substr(0, comma));
        if (!device || !seen.insert(device->id).second) break;
        devices.push_back(std::move(*device));
        if (comma == std::string_view::npos || devices.size() >= std::size_t(kMaxCudaDevices))
            break;
        value.remove_prefix(comma + 1);
    }
    return devices;
}

std::vector<CudaDevice> visible_devices(DeviceKind kind, const EnvMap& env,
                                        const std::vector<std::uint32_t>& node_ids) {
    std::vector<CudaDevice> devices;
    if (auto name = visibility_variable_set(kind, env)) {
        devices = parse_visible_devices(kind, *lookup(env, *name));
        auto beyond = std::find_if(devices.begin(), devices.end(), [&](const CudaDevice& d) {
            return d.ordinal &&
                   std::find(node_ids.begin(), node_ids.end(), *d.ordinal) == node_ids.end();
        });
        devices.erase(beyond, devices.end());
        return devices;
    }
    for (auto id : node_ids) devices.push_back(CudaDevice{std::to_string(id), id});
    return devices;
}

std::optional<std::vector<CudaDevice>> parse_rocr_visible_devices(const EnvMap& env) {
    auto value = lookup(env, "ROCR_VISIBLE_DEVICES");
    if (!value) return std::nullopt;
    return parse_cuda_visible_devices(*value);
}

}  // namespace ptrun::env
