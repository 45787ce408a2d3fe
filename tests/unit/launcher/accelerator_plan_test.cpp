// Accelerators beyond NVIDIA from host facts to each worker's environment: AMD, Intel (xpu),
// Gaudi (hpu) and Ascend (npu) read from recorded device trees (placement/topologies/devices).
#include <catch2/catch.hpp>
#include <fstream>

#include "../placement/recorded_machine.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/host_facts.hpp"
#include "ptrun/launcher/plan/local_placement.hpp"

using namespace ptrun::launcher;
using ptrun::env::DeviceKind;
using ptrun::env::EnvMap;

namespace {

std::string root(const std::string& name) {
    return std::string(PTRUN_TOPOLOGY_DIR) + "/devices/" + name;
}

HostFacts host_of(const std::string& name, EnvMap env = {}) {
    env["PTRUN_DEVICE_ROOT"] = root(name);
    auto host = read_host_facts(env);
    host.cpu_count = 8;
    return host;
}

LaunchConfig config_for(std::vector<std::string> args, const HostFacts& host) {
    args.push_back("train");
    return resolve(std::get<LaunchOptions>(parse_command_line(args, {})), host);
}

/// Each worker's value of `variable` ("-" when ptrun leaves it alone).
std::vector<std::string> worker_values(const LocalPlacement& plan, const std::string& variable) {
    std::vector<std::string> out;
    for (int lr = 0; lr < static_cast<int>(plan.workers.size()); ++lr) {
        EnvMap env;
        apply_to_env(plan, lr, env);
        out.push_back(env.count(variable) ? env[variable] : "-");
        CHECK_FALSE(env.count("CUDA_DEVICE_ORDER"));  // NVIDIA's alone
    }
    return out;
}

std::string cuda(const std::vector<ptrun::env::CudaDevice>& devices) {
    return ptrun::env::cuda_visible_devices_value(devices);
}

}  // namespace

TEST_CASE("host facts: AMD GPUs are the gpus when no NVIDIA driver is loaded",
          "[launcher][devices]") {
    auto host = host_of("amd-mi300x");
    CHECK(host.gpu_kind == DeviceKind::AmdGpu);
    CHECK(cuda(host.gpus) == "0,1,2,3");
    CHECK(explain_devices_row(host).value == "4 AMD GPUs (from /sys/class/kfd/kfd/topology)");
    // ROCR_VISIBLE_DEVICES chooses first; HIP_VISIBLE_DEVICES counts within what it left.
    host = host_of("amd-mi300x", {{"ROCR_VISIBLE_DEVICES", "2,3"}, {"HIP_VISIBLE_DEVICES", "1"}});
    CHECK(cuda(host.gpus) == "1");
    REQUIRE(host.accelerators.size() == 1);
    CHECK(host.accelerators[0].found.devices[1].bus == "0000:aa:00.0");
    // A kfd UUID in any case names its GPU; HIP also reads CUDA_VISIBLE_DEVICES.
    host = host_of("amd-mi300x", {{"ROCR_VISIBLE_DEVICES", "GPU-63D0B1E4C2A9F718"},
                                  {"CUDA_VISIBLE_DEVICES", "0,1"}});
    CHECK(cuda(host.gpus) == "0");
    CHECK(host.accelerators[0].found.devices.at(0).bus == "0000:8a:00.0");
}

TEST_CASE("host facts: with NVIDIA and AMD GPUs both, gpu counts NVIDIA's and says so",
          "[launcher][devices]") {
    auto host = host_of("nvidia-and-amd");
    CHECK(host.gpu_kind == DeviceKind::NvidiaGpu);
    CHECK(cuda(host.gpus) == "0,1");
    CHECK_THAT(explain_devices_row(host).value,
               Catch::StartsWith("2 NVIDIA GPUs (from /proc/driver/nvidia/gpus); 1 AMD GPU") &&
                   Catch::Contains("gpu and auto count the NVIDIA GPUs"));
    CHECK_THAT(explain_devices_row(host).from, Catch::Contains("PTRUN_DEVICE_ROOT="));
}

TEST_CASE("resolve: --nproc-per-node xpu, hpu and npu count each vendor's devices",
          "[launcher][devices]") {
    CHECK(config_for({"--nproc-per-node", "xpu"}, host_of("intel-max1550")).nproc_per_node == 4);
    auto c = config_for({"--nproc-per-node", "hpu"}, host_of("gaudi2"));
    CHECK(c.nproc_per_node == 4);
    CHECK(c.device_kind == DeviceKind::Gaudi);
    c = config_for({"--nproc-per-node", "npu"}, host_of("ascend-910b"));
    CHECK(c.nproc_per_node == 8);
    // auto: torch.accelerator's count when there is one, else the CPUs.
    c = config_for({"--nproc-per-node", "auto"}, host_of("ascend-910b"));
    CHECK(c.nproc_per_node == 8);
    CHECK(c.device_kind == DeviceKind::AscendNpu);
    CHECK(config_for({"--nproc-per-node", "auto"}, host_of("amd-mi300x")).nproc_per_node == 4);
    CHECK(config_for({"--nproc-per-node", "auto"}, host_of("none")).nproc_per_node == 8);
    CHECK(config_for({"--nproc-per-node", "gpu"}, host_of("amd-mi300x")).device_kind ==
          DeviceKind::AmdGpu);
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "xpu"}, host_of("ascend-910b")),
                      "--nproc-per-node 'xpu': no Intel GPU found on this node (ptrun looks in "
                      "/sys/class/drm (i915 and xe render nodes))");
    CHECK_THROWS_WITH(
        config_for({"--nproc-per-node", "npu"},
                   host_of("ascend-910b", {{"ASCEND_RT_VISIBLE_DEVICES", "x"}})),
        Catch::Contains("8 Ascend NPU(s) found in /dev/davinci*, but ptrun's environment shows "
                        "none of them (ASCEND_RT_VISIBLE_DEVICES)"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "tpu"}, host_of("none")),
                      Catch::Contains("auto, cpu, gpu, xpu, hpu, npu"));
}

TEST_CASE("each worker gets its devices through its vendor's variable", "[launcher][devices]") {
    auto host = host_of("amd-mi300x");
    auto c = config_for({"--nproc-per-node", "gpu:1,3", "--virtual-local-rank"}, host);
    auto plan = plan_local_placement(c, host_devices(host, c.device_kind), {});
    CHECK(worker_values(plan, "HIP_VISIBLE_DEVICES") == std::vector<std::string>{"1", "3"});
    CHECK(worker_values(plan, "CUDA_VISIBLE_DEVICES") == std::vector<std::string>{"-", "-"});

    host = host_of("gaudi2", {{"HABANA_VISIBLE_MODULES", "3,1"}});
    c = config_for({"--nproc-per-node", "hpu", "--virtual-local-rank"}, host);
    plan = plan_local_placement(c, host_devices(host, c.device_kind), {});
    CHECK(worker_values(plan, "HABANA_VISIBLE_MODULES") == std::vector<std::string>{"3", "1"});

    host = host_of("intel-max1550");
    c = config_for({"--nproc-per-node", "xpu:2,3"}, host);
    plan = plan_local_placement(c, host_devices(host, c.device_kind), {});
    CHECK(worker_values(plan, "ZE_AFFINITY_MASK") == std::vector<std::string>{"2,3", "2,3"});
    auto rows = explain_rows(plan, c, {});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].value == "xpus 2,3, cpus inherited");
    CHECK_THAT(rows[0].from, Catch::StartsWith("--nproc-per-node xpu:LIST (ZE_AFFINITY_MASK)"));

    host = host_of("ascend-910b");
    c = config_for({"--nproc-per-node", "npu:7", "--virtual-local-rank"}, host);
    plan = plan_local_placement(c, host_devices(host, c.device_kind), {});
    CHECK(worker_values(plan, "ASCEND_RT_VISIBLE_DEVICES") == std::vector<std::string>{"7"});
}

TEST_CASE("numa binding places AMD GPU workers near their GPUs from sysfs alone",
          "[launcher][devices]") {
    ptrun::placement::test::RecordedMachine m("dgx-h100");  // two sockets' CPUs and memory
    // The MI300X tree's PCI devices, on the recorded machine's nodes.
    for (auto [bus, node] : {std::pair{"0000:0c:00.0", 0},
                             {"0000:22:00.0", 0},
                             {"0000:8a:00.0", 1},
                             {"0000:aa:00.0", 1}}) {
        std::filesystem::create_directories(m.sys() / "bus/pci/devices" / bus);
        std::ofstream(m.sys() / "bus/pci/devices" / bus / "numa_node") << node << "\n";
    }
    auto host = host_of("amd-mi300x");
    auto c = config_for({"--nproc-per-node", "gpu:0,3", "--numa-binding", "node"}, host);
    auto sources = placement_sources(host, c.device_kind);
    sources.sys = m.sys();
    sources.limits = [&m] {
        return ptrun::placement::ProcessLimits{m.allowed_cpus(), m.allowed_mems()};
    };
    auto plan = plan_local_placement(c, host_devices(host, c.device_kind), {}, sources);
    CHECK(plan.warnings.empty());
    REQUIRE(plan.workers[1].binding);
    CHECK(to_list(plan.workers[0].binding->mems) == "0");
    CHECK(to_list(plan.workers[1].binding->mems) == "1");
    CHECK_FALSE(plan.cuda_device_order);

    // Ascend NPUs have no PCI address in sysfs: CPU-only binding, with a warning.
    host = host_of("ascend-910b");
    c = config_for({"--nproc-per-node", "npu:0,1", "--numa-binding", "node"}, host);
    sources = placement_sources(host, c.device_kind);
    sources.sys = m.sys();
    sources.limits = [&m] {
        return ptrun::placement::ProcessLimits{m.allowed_cpus(), m.allowed_mems()};
    };
    plan = plan_local_placement(c, host_devices(host, c.device_kind), {}, sources);
    REQUIRE(plan.warnings.size() == 1);
    CHECK_THAT(plan.warnings[0], Catch::Contains("Ascend NPU 0 has no PCI address") &&
                                     Catch::Contains("as CPU-only ones"));
}
