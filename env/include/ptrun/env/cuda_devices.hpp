#pragma once
/// CUDA_VISIBLE_DEVICES as CUDA reads it, and the values a launcher gives its workers: which
/// devices a process sees, in which order, and which ones a `gpu:1,3,5` selection names.
/// Pure: values in, values out; the caller reads the environment and the driver.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/env/env_map.hpp"

namespace ptrun::env {

/// One device named in CUDA_VISIBLE_DEVICES: an ordinal, or a GPU-/MIG- UUID (CUDA accepts any
/// prefix that names one device).
struct CudaDevice {
    std::string id;                        ///< as written back into CUDA_VISIBLE_DEVICES: "3"
    std::optional<std::uint32_t> ordinal;  ///< the ordinal; empty for a UUID
    bool operator==(const CudaDevice&) const = default;
};

/// Most devices a CUDA_VISIBLE_DEVICES value or a selection may name: far above any node.
inline constexpr int kMaxCudaDevices = 4096;

/// The devices `value` makes visible, in CUDA's enumeration order, by the driver's rules (those
/// torch.cuda._parse_visible_devices models): the first entry decides the kind; ordinals are read
/// like strtoul ("1gpu" is 1, " 2" is 2); the list ends at the first entry that is not of that
/// kind, is negative or has no digits ("0,1,-1,2" shows 0 and 1; "NoDevFiles", "" and "-1" show
/// none); a device named twice hides every device ("0,0" shows none). Ordinals past the node's
/// last device end the list too, which only the driver knows: callers that know the count pass
/// the result through limit_to_physical(). Never throws.
std::vector<CudaDevice> parse_cuda_visible_devices(std::string_view value);

/// `devices` up to the first ordinal that is not below `physical_count` (CUDA ends the list
/// there); UUIDs pass unchanged.
std::vector<CudaDevice> limit_to_physical(std::vector<CudaDevice> devices, int physical_count);

/// What a process with environment `env` sees: CUDA_VISIBLE_DEVICES parsed when it is set,
/// else ordinals 0..physical_count-1.
std::vector<CudaDevice> visible_cuda_devices(const EnvMap& env, int physical_count);

/// The list of a `gpu:LIST` selection ("1,3,5"; ranges "0-3"): indexes into the visible
/// devices, in the order the workers take them. Throws ParseError naming the entry when one is
/// not a non-negative integer or range, repeats, or the list is empty or longer than
/// kMaxCudaDevices.
std::vector<int> parse_gpu_selection(std::string_view list);

/// The devices `selection` picks from `visible`, in selection order. Throws ParseError naming
/// the index and the visible devices when an index is not below visible.size().
std::vector<CudaDevice> select_devices(const std::vector<CudaDevice>& visible,
                                       const std::vector<int>& selection);

/// The CUDA_VISIBLE_DEVICES value that names `devices` in order ("" for none).
std::string cuda_visible_devices_value(const std::vector<CudaDevice>& devices);

/// CUDA_VISIBLE_DEVICES for the worker at `local_rank` of a group using `devices` in order:
/// every device (LOCAL_RANK indexes them, as torch code expects), or with `virtual_local_rank`
/// only its own (it runs with LOCAL_RANK=0). Throws ParseError when `virtual_local_rank` and
/// `local_rank` is not below devices.size().
std::string worker_cuda_visible_devices(const std::vector<CudaDevice>& devices, int local_rank,
                                        bool virtual_local_rank);

}  // namespace ptrun::env
