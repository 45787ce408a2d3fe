#include "ptrun/placement/gpu_locator.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string_view>

#include "ptrun/placement/placement_error.hpp"
#include "ptrun/placement/topology.hpp"

namespace ptrun::placement {
namespace {

// The few NVML declarations used, as nvml.h has them (a stable C ABI; no header needed to build).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kUuidBytes = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
struct NvmlPciInfo {
    char bus_id_legacy[16];
    unsigned domain;
    unsigned bus;
    unsigned device;
    unsigned pci_device_id;
    unsigned pci_sub_system_id;
    char bus_id[32];
};

class Nvml final : public GpuBusIds {
  public:
    explicit Nvml(void* handle) : handle_(handle) {}
    ~Nvml() override {
        if (initialised_) shutdown_();
        ::dlclose(handle_);
    }
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    /// Resolves every function and initialises NVML; "" on success, else why not.
    std::string start() {
        if (!find(init_, "nvmlInit_v2") || !find(shutdown_, "nvmlShutdown") ||
            !find(count_, "nvmlDeviceGetCount_v2") ||
            !find(by_index_, "nvmlDeviceGetHandleByIndex_v2") ||
            !find(by_uuid_, "nvmlDeviceGetHandleByUUID") || !find(uuid_, "nvmlDeviceGetUUID") ||
            !find(error_string_, "nvmlErrorString") ||
            !(find(pci_info_, "nvmlDeviceGetPciInfo_v3") ||
              find(pci_info_, "nvmlDeviceGetPciInfo_v2"))) {
            return missing_;
        }
        find(mig_parent_, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");  // optional: R470+
        if (NvmlReturn rc = init_(); rc != kNvmlSuccess) return "nvmlInit: " + text(rc);
        initialised_ = true;
        return {};
    }

    std::string bus_id(const env::CudaDevice& device) override {
        NvmlDevice handle = device.ordinal ? by_ordinal(*device.ordinal) : by_uuid(device.id);
        NvmlPciInfo info{};
        if (NvmlReturn rc = pci_info_(handle, &info); rc != kNvmlSuccess) {
            throw PlacementError("NVML: no PCI information for GPU " + device.id + ": " + text(rc));
        }
        char bus[16];
        std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", info.domain & 0xffff, info.bus & 0xff,
                      info.device & 0x1f);
        return bus;
    }

  private:
    template <typename Fn>
    bool find(Fn& fn, const char* name) {
        fn = reinterpret_cast<Fn>(::dlsym(handle_, name));
        if (!fn && missing_.empty()) missing_ = std::string("NVML lacks ") + name;
        return fn != nullptr;
    }

    std::string text(NvmlReturn rc) const {
        const char* s = error_string_ ? error_string_(rc) : nullptr;
        return s ? s : "error " + std::to_string(rc);
    }

    NvmlDevice by_ordinal(std::uint32_t ordinal) {
        NvmlDevice handle = nullptr;
        if (NvmlReturn rc = by_index_(ordinal, &handle); rc != kNvmlSuccess) {
            throw PlacementError("NVML: no GPU " + std::to_string(ordinal) + ": " + text(rc));
        }
        return handle;
    }

    NvmlDevice by_uuid(const std::string& id) {
        // "MIG-GPU-<uuid>/gi/ci" (drivers before R470) names its GPU inside.
        std::string uuid = id.rfind("MIG-GPU-", 0) == 0 ? id.substr(4, id.find('/') - 4) : id;
        NvmlDevice handle = nullptr;
        if (by_uuid_(uuid.c_str(), &handle) == kNvmlSuccess) {
            NvmlDevice parent = nullptr;
            if (uuid.rfind("MIG-", 0) == 0 && mig_parent_ &&
                mig_parent_(handle, &parent) == kNvmlSuccess) {
                return parent;
            }
            return handle;
        }
        // CUDA takes any unique prefix of a GPU UUID: find the one GPU it names.
        unsigned count = 0;
        if (NvmlReturn rc = count_(&count); rc != kNvmlSuccess) {
            throw PlacementError("NVML: cannot count GPUs: " + text(rc));
        }
        NvmlDevice found = nullptr;
        for (unsigned i = 0; i < count; ++i) {
            NvmlDevice d = nullptr;
            char full[kUuidBytes] = {};
            if (by_index_(i, &d) != kNvmlSuccess || uuid_(d, full, kUuidBytes) != kNvmlSuccess)
                continue;
            if (std::string_view(full).rfind(uuid, 0) != 0) continue;
            if (found) throw PlacementError("NVML: '" + id + "' names more than one GPU");
            found = d;
        }
        if (!found) throw PlacementError("NVML: no GPU has the UUID '" + id + "'");
        return found;
    }

    void* handle_;
    bool initialised_ = false;
    std::string missing_;
    NvmlReturn (*init_)() = nullptr;
    NvmlReturn (*shutdown_)() = nullptr;
    NvmlReturn (*count_)(unsigned*) = nullptr;
    NvmlReturn (*by_index_)(unsigned, NvmlDevice*) = nullptr;
    NvmlReturn (*by_uuid_)(const char*, NvmlDevice*) = nullptr;
    NvmlReturn (*uuid_)(NvmlDevice, char*, unsigned) = nullptr;
    NvmlReturn (*pci_info_)(NvmlDevice, NvmlPciInfo*) = nullptr;
    NvmlReturn (*mig_parent_)(NvmlDevice, NvmlDevice*) = nullptr;
    const char* (*error_string_)(NvmlReturn) = nullptr;
};

}  // namespace

std::unique_ptr<GpuBusIds> open_nvml(std::string& why_not, const char* library) {
    void* handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* error = ::dlerror();
        why_not = std::string("cannot load ") + library + ": " + (error ? error : "unknown error");
        return nullptr;
    }
    auto nvml = std::make_unique<Nvml>(handle);
    why_not = nvml->start();
    if (!why_not.empty()) return nullptr;
    return nvml;
}

std::vector<GpuPlace> locate_gpus(const std::vector<env::CudaDevice>& devices, GpuBusIds& ids,
                                  const std::filesystem::path& sys) {
    std::vector<GpuPlace> places;
    for (const auto& device : devices) {
        std::string bus = sysfs_bus_id(ids.bus_id(device));
        places.push_back(GpuPlace{"GPU " + device.id + " (" + bus + ")", pci_numa_node(sys, bus)});
    }
    return places;
}

}  // namespace ptrun::placement
