// What each local worker gets from --nproc-per-node gpu:LIST, --virtual-local-rank and
// --numa-binding (plan_local_placement), over recorded machines and a fake driver.
#include "ptrun/launcher/plan/local_placement.hpp"

#include <catch2/catch.hpp>

#include "../placement/recorded_machine.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;
using ptrun::env::CudaDevice;
using ptrun::env::EnvMap;
using ptrun::placement::test::FakeBusIds;
using ptrun::placement::test::RecordedMachine;

namespace {

std::vector<CudaDevice> ordinals(int n) {
    std::vector<CudaDevice> out;
    for (int i = 0; i < n; ++i) out.push_back({std::to_string(i), static_cast<std::uint32_t>(i)});
    return out;
}

LaunchConfig config_for(std::vector<std::string> args, const std::vector<CudaDevice>& gpus) {
    args.push_back("train");
    HostFacts host;
    host.cpu_count = 8;
    host.gpus = gpus;
    return resolve(std::get<LaunchOptions>(parse_command_line(args, {})), host);
}

/// Sources reading `m` as the machine, NVML answering for its GPUs (or absent).
PlacementSources sources_of(const RecordedMachine& m, bool nvml = true) {
    PlacementSources s;
    s.sys = m.sys();
    s.limits = [&m] { return ptrun::placement::ProcessLimits{m.allowed_cpus(), m.allowed_mems()}; };
    s.open_gpus = [&m, nvml](std::string& why) -> std::unique_ptr<ptrun::placement::GpuBusIds> {
        if (!nvml) {
            why = "libnvidia-ml.so.1: cannot open shared object file";
            return nullptr;
        }
        return std::make_unique<FakeBusIds>(m);
    };
    return s;
}

/// Each worker's environment changes, as "CUDA_VISIBLE_DEVICES|LOCAL_RANK|CUDA_DEVICE_ORDER".
std::vector<std::string> worker_envs(const LocalPlacement& plan) {
    std::vector<std::string> out;
    for (int lr = 0; lr < static_cast<int>(plan.workers.size()); ++lr) {
        EnvMap env{{"LOCAL_RANK", std::to_string(lr)}};
        apply_to_env(plan, lr, env);
        out.push_back(env.count("CUDA_VISIBLE_DEVICES") ? env["CUDA_VISIBLE_DEVICES"] : "-");
        out.back() += "|" + env["LOCAL_RANK"] + "|" +
                      (env.count("CUDA_DEVICE_ORDER") ? env["CUDA_DEVICE_ORDER"] : "-");
    }
    return out;
}

}  // namespace

TEST_CASE("gpu:LIST gives every worker the selected devices in order", "[launcher][placement]") {
    auto visible = ptrun::env::parse_cuda_visible_devices("4,5,6,7");
    auto c = config_for({"--nproc-per-node", "gpu:3,1"}, visible);
    CHECK(c.nproc_per_node == 2);
    auto plan = plan_local_placement(c, visible, {});
    CHECK(worker_envs(plan) == std::vector<std::string>{"7,5|0|PCI_BUS_ID", "7,5|1|PCI_BUS_ID"});
    // The user's own CUDA_DEVICE_ORDER is theirs.
    plan = plan_local_placement(c, visible, {{"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}});
    CHECK(worker_envs(plan) == std::vector<std::string>{"7,5|0|-", "7,5|1|-"});
}

TEST_CASE("virtual local rank gives each worker LOCAL_RANK=0 and its own device",
          "[launcher][placement]") {
    auto uuids = ptrun::env::parse_cuda_visible_devices("GPU-aa,GPU-bb,GPU-cc");
    auto c = config_for({"--nproc-per-node", "gpu:2,0", "--virtual-local-rank"}, uuids);
    CHECK(worker_envs(plan_local_placement(c, uuids, {})) ==
          std::vector<std::string>{"GPU-cc|0|-", "GPU-aa|0|-"});  // UUIDs need no device order
    c = config_for({"--nproc-per-node", "2", "--virtual-local-rank"}, ordinals(4));
    CHECK(worker_envs(plan_local_placement(c, ordinals(4), {})) ==
          std::vector<std::string>{"0|0|PCI_BUS_ID", "1|0|PCI_BUS_ID"});
    // CPU-only workers: LOCAL_RANK=0, CUDA_VISIBLE_DEVICES left alone.
    c = config_for({"--nproc-per-node", "2", "--virtual-local-rank"}, {});
    CHECK(worker_envs(plan_local_placement(c, {}, {})) ==
          std::vector<std::string>{"-|0|-", "-|0|-"});
}

TEST_CASE("without placement options the workers' devices are inherited untouched",
          "[launcher][placement]") {
    auto c = config_for({"--nproc-per-node", "2"}, ordinals(2));
    auto plan = plan_local_placement(c, ordinals(2), {});
    CHECK(worker_envs(plan) == std::vector<std::string>{"-|0|-", "-|1|-"});
    CHECK_FALSE(plan.workers[0].binding);
    CHECK(worker_gpus(plan, {}) == "0,1");  // what an untouched worker sees
}

TEST_CASE("gpu:LIST and --virtual-local-rank refuse what the node cannot give",
          "[launcher][placement]") {
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "gpu:1,4"}, ordinals(4)),
                      Catch::Contains("'gpu:1,4'") && Catch::Contains("device 4 is not among"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "gpu:1,1"}, ordinals(4)),
                      Catch::Contains("appears twice"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "gpu:"}, ordinals(4)),
                      Catch::Contains("'gpu:'"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "gpu:0"}, {}),
                      Catch::Contains("0 devices this node shows (none)"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "3", "--virtual-local-rank"}, ordinals(2)),
                      Catch::Contains("--virtual-local-rank with 3 workers"));
    CHECK_THROWS_WITH(config_for({"--numa-binding", "rack"}, {}),
                      Catch::Contains("--numa-binding 'rack'") &&
                          Catch::Contains("node, socket, exclusive or core-complex"));
}

TEST_CASE("numa binding binds GPU workers near their GPUs on a recorded DGX H100",
          "[launcher][placement]") {
    RecordedMachine m("dgx-h100");
    auto gpus = m.gpus();
    auto c = config_for({"--nproc-per-node", "gpu:0,4", "--numa-binding", "node"}, gpus);
    auto plan = plan_local_placement(c, gpus, {}, sources_of(m));
    REQUIRE(plan.workers[0].binding);
    CHECK(to_list(plan.workers[0].binding->cpus) == "0-55,112-167");
    CHECK(to_list(plan.workers[1].binding->cpus) == "56-111,168-223");
    CHECK(to_list(plan.workers[1].binding->mems) == "1");
    CHECK(plan.workers[1].prepared.cpu_mask.size() >= 4);  // masks made before any spawn
    CHECK(plan.cuda_device_order == "PCI_BUS_ID");
    CHECK(plan.warnings.empty());
}

TEST_CASE("numa binding without NVML binds the workers as CPU-only ones and says so",
          "[launcher][placement]") {
    RecordedMachine m("dgx-h100");
    auto c = config_for({"--nproc-per-node", "2", "--numa-binding", "exclusive"}, m.gpus());
    auto plan = plan_local_placement(c, m.gpus(), {}, sources_of(m, false));
    REQUIRE(plan.warnings.size() == 1);
    CHECK_THAT(plan.warnings[0],
               Catch::Contains("libnvidia-ml.so.1") && Catch::Contains("as CPU-only ones"));
    REQUIRE(plan.workers[1].binding);
    // Two CPU-only workers over two nodes: one each, every physical core of the node.
    CHECK(to_list(plan.workers[0].binding->cpus) == "0-55,112-167");
    CHECK(to_list(plan.workers[1].binding->cpus) == "56-111,168-223");
}

TEST_CASE("numa binding that cannot be made is a usage error naming the worker",
          "[launcher][placement]") {
    RecordedMachine m("this-vm");
    auto c = config_for({"--nproc-per-node", "3", "--numa-binding", "exclusive"}, {});
    CHECK_THROWS_AS(plan_local_placement(c, {}, {}, sources_of(m)), UsageError);
    c = config_for({"--nproc-per-node", "2", "--numa-binding", "exclusive"}, {});
    auto plan = plan_local_placement(c, {}, {}, sources_of(m));
    CHECK(to_list(plan.workers[0].binding->cpus) == "0");
    CHECK(to_list(plan.workers[1].binding->cpus) == "1");
    CHECK_FALSE(plan.cuda_device_order);
}

TEST_CASE("explain shows each worker's GPUs and binding", "[launcher][placement]") {
    RecordedMachine m("this-vm");
    auto c = config_for({"--nproc-per-node", "2", "--numa-binding", "exclusive"}, {});
    auto rows = explain_rows(plan_local_placement(c, {}, {}, sources_of(m)), c, {});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].what == "local rank 0");
    CHECK(rows[0].value == "gpus none, cpus 0, memory node 0");
    CHECK(rows[1].value == "gpus none, cpus 1, memory node 0");
    CHECK_THAT(rows[1].from, Catch::Contains("--numa-binding exclusive"));
}
