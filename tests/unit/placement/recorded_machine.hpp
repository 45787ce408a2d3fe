#pragma once
/// Test fixtures: a machine recorded as a short description (topologies/NAME.topo) is written
/// out as the sysfs tree ptrun reads, in a temporary directory removed with the value.
///
/// Description lines ('#' starts a comment):
///   node ID cpus LIST [mem KB]              a NUMA node (mem 0: a node without memory)
///   cpus LIST package P cores LIST [l3 ID]  CPUs and their core ids, paired in order; CPUs of
///                                           one package and core id are thread siblings
///   pci BUS node N                          a PCI device's numa_node (-1: unknown)
///   gpu ORDINAL BUS UUID                    a GPU as the driver (NVML) would map it
///   allowed LIST / mems LIST                the CPUs / memory nodes the process was given
///   no-cache                                no cpu*/cache directories
/// Without node lines there is no devices/system/node (a kernel without NUMA).

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/placement/gpu_locator.hpp"
#include "ptrun/placement/id_set.hpp"

namespace ptrun::placement::test {

class RecordedMachine {
  public:
    /// Writes topologies/<name>.topo out; throws std::runtime_error on a malformed line.
    explicit RecordedMachine(const std::string& name);
    ~RecordedMachine();
    RecordedMachine(const RecordedMachine&) = delete;
    RecordedMachine& operator=(const RecordedMachine&) = delete;

    /// The directory that plays /sys.
    const std::filesystem::path& sys() const { return sys_; }
    /// The CPUs the process was given: `allowed`, else every online CPU.
    const IdSet& allowed_cpus() const { return allowed_; }
    const std::optional<IdSet>& allowed_mems() const { return mems_; }
    /// GPU UUID or ordinal -> PCI bus id, as the `gpu` lines say.
    const std::map<std::string, std::string>& gpu_buses() const { return buses_; }
    /// The `gpu` lines' devices, in ordinal order.
    std::vector<env::CudaDevice> gpus() const;

  private:
    std::filesystem::path dir_;
    std::filesystem::path sys_;
    IdSet allowed_;
    std::optional<IdSet> mems_;
    std::map<std::string, std::string> buses_;
    std::map<int, std::string> uuids_;
};

/// A driver that knows the recorded machine's GPUs: ordinals and UUIDs (or unique prefixes).
class FakeBusIds final : public GpuBusIds {
  public:
    explicit FakeBusIds(const RecordedMachine& machine) : machine_(machine) {}
    std::string bus_id(const env::CudaDevice& device) override;

  private:
    const RecordedMachine& machine_;
};

}  // namespace ptrun::placement::test
