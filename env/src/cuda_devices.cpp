#include "ptrun/env/cuda_devices.hpp"

#include <algorithm>
#include <set>

namespace ptrun::env {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

std::string_view trimmed(std::string_view text) {
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    auto first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return {};
    auto last = text.find_last_not_of(kSpace);
    return text.substr(first, last - first + 1);
}

/// The ordinal an entry starts with, read like strtoul; nullopt for no digits, a negative
/// number, or one no node reaches (at least kMaxCudaDevices).
std::optional<std::uint32_t> leading_ordinal(std::string_view entry) {
    entry = trimmed(entry);
    bool negative = false;
    if (!entry.empty() && (entry.front() == '+' || entry.front() == '-')) {
        negative = entry.front() == '-';
        entry.remove_prefix(1);
    }
    std::uint32_t value = 0;
    std::size_t digits = 0;
    for (char c : entry) {
        if (c < '0' || c > '9') break;
        value = value * 10 + static_cast<std::uint32_t>(c - '0');
        if (value >= static_cast<std::uint32_t>(kMaxCudaDevices)) return std::nullopt;
        ++digits;
    }
    if (digits == 0 || (negative && value != 0)) return std::nullopt;
    return value;
}

/// Splits `text` at commas, calling `take(entry)` until it returns false.
template <typename Take>
void for_each_entry(std::string_view text, Take take) {
    while (true) {
        auto comma = text.find(',');
        if (!take(text.substr(0, comma)) || comma == std::string_view::npos) return;
        text.remove_prefix(comma + 1);
    }
}

std::string listed(const std::vector<CudaDevice>& devices) {
    return devices.empty() ? std::string("none") : cuda_visible_devices_value(devices);
}

}  // namespace

std::vector<CudaDevice> parse_cuda_visible_devices(std::string_view value) {
    std::vector<CudaDevice> devices;
    std::set<std::string> seen;  // ids: a list of 4,096 is checked in n log n, not n^2
    bool repeated = false;
    auto add = [&](CudaDevice device) {
        if (!seen.insert(device.id).second) {
            repeated = true;
            return false;
        }
        devices.push_back(std::move(device));
        return devices.size() < static_cast<std::size_t>(kMaxCudaDevices);
    };
    std::string_view uuid_kind = starts_with(value, "GPU-")   ? "GPU-"
                                 : starts_with(value, "MIG-") ? "MIG-"
                                                              : "";
    for_each_entry(value, [&](std::string_view entry) {
        if (!uuid_kind.empty()) {
            // An empty UUID prefix would match every device: CUDA refuses it as ambiguous.
            if (!starts_with(entry, uuid_kind) || entry.size() == uuid_kind.size()) return false;
            return add(CudaDevice{std::string(entry), std::nullopt});
        }
        auto ordinal = leading_ordinal(entry);
        if (!ordinal) return false;
        return add(CudaDevice{std::to_string(*ordinal), ordinal});
    });
    if (repeated) devices.clear();
    return devices;
}

std::vector<CudaDevice> limit_to_physical(std::vector<CudaDevice> devices, int physical_count) {
    auto beyond = std::find_if(devices.begin(), devices.end(), [&](const CudaDevice& d) {
        return d.ordinal && static_cast<std::int64_t>(*d.ordinal) >= physical_count;
    });
    devices.erase(beyond, devices.end());
    return devices;
}

std::vector<CudaDevice> visible_cuda_devices(const EnvMap& env, int physical_count) {
    if (auto value = lookup(env, "CUDA_VISIBLE_DEVICES")) return parse_cuda_visible_devices(*value);
    std::vector<CudaDevice> devices;
    for (int i = 0; i < std::min(physical_count, kMaxCudaDevices); ++i) {
        devices.push_back(CudaDevice{std::to_string(i), static_cast<std::uint32_t>(i)});
    }
    return devices;
}

std::vector<int> parse_gpu_selection(std::string_view list) {
    std::vector<int> picked;
    std::set<int> seen;
    auto index = [&](std::string_view text) {
        auto v = parse_int(text);
        if (!v || *v < 0 || *v >= kMaxCudaDevices || text.front() == '+') {
            throw ParseError("device '" + std::string(text) + "' in '" + std::string(list) +
                             "': expected a device index from 0 to " +
                             std::to_string(kMaxCudaDevices - 1));
        }
        return static_cast<int>(*v);
    };
    for_each_entry(list, [&](std::string_view entry) {
        if (entry.empty()) {
            throw ParseError("'" + std::string(list) +
                             "': expected device indexes like 1,3,5 or 0-3, with no empty entry");
        }
        auto dash = entry.find('-', 1);
        int first = index(entry.substr(0, dash));
        int last = dash == std::string_view::npos ? first : index(entry.substr(dash + 1));
        if (last < first) {
            throw ParseError("range '" + std::string(entry) + "' in '" + std::string(list) +
                             "' runs backwards");
        }
        for (int i = first; i <= last; ++i) {
            if (!seen.insert(i).second) {
                throw ParseError("device " + std::to_string(i) + " appears twice in '" +
                                 std::string(list) + "'");
            }
            picked.push_back(i);
        }
        if (picked.size() > static_cast<std::size_t>(kMaxCudaDevices)) {
            throw ParseError("'" + std::string(list) + "' names more than " +
                             std::to_string(kMaxCudaDevices) + " devices");
        }
        return true;
    });
    return picked;
}

std::vector<CudaDevice> select_devices(const std::vector<CudaDevice>& visible,
                                       const std::vector<int>& selection) {
    std::vector<CudaDevice> picked;
    for (int i : selection) {
        if (i < 0 || static_cast<std::size_t>(i) >= visible.size()) {
            throw ParseError("device " + std::to_string(i) + " is not among the " +
                             std::to_string(visible.size()) + " devices this node shows (" +
                             listed(visible) + ")");
        }
        picked.push_back(visible[static_cast<std::size_t>(i)]);
    }
    return picked;
}

std::string cuda_visible_devices_value(const std::vector<CudaDevice>& devices) {
    std::string value;
    for (const auto& d : devices) {
        if (!value.empty()) value.push_back(',');
        value.append(d.id);
    }
    return value;
}

std::string worker_cuda_visible_devices(const std::vector<CudaDevice>& devices, int local_rank,
                                        bool virtual_local_rank) {
    if (!virtual_local_rank) return cuda_visible_devices_value(devices);
    if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= devices.size()) {
        throw ParseError("local rank " + std::to_string(local_rank) +
                         " has no device of its own: " + std::to_string(devices.size()) +
                         " devices (" + listed(devices) + ")");
    }
    return devices[static_cast<std::size_t>(local_rank)].id;
}

}  // namespace ptrun::env
