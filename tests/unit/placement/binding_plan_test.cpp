#include "ptrun/placement/binding_plan.hpp"

#include <catch2/catch.hpp>

#include "ptrun/placement/placement_error.hpp"
#include "ptrun/placement/topology.hpp"
#include "recorded_machine.hpp"

using namespace ptrun::placement;
using ptrun::placement::test::FakeBusIds;
using ptrun::placement::test::RecordedMachine;

namespace {

/// One row: a recorded machine, a mode, how many workers, whether they use the machine's GPUs,
/// and each worker's expected "cpus|mems".
struct Row {
    const char* machine;
    BindingMode mode;
    int workers;
    bool gpus;
    std::vector<const char*> expected;
};

std::vector<std::string> plan(const Row& row) {
    RecordedMachine m(row.machine);
    BindingRequest r;
    r.mode = row.mode;
    r.workers = row.workers;
    r.allowed_cpus = m.allowed_cpus();
    r.allowed_mems = m.allowed_mems();
    if (row.gpus) {
        FakeBusIds driver(m);
        r.gpus = locate_gpus(m.gpus(), driver, m.sys());
    }
    std::vector<std::string> out;
    for (const auto& b : plan_bindings(read_topology(m.sys()), r)) {
        out.push_back(to_list(b.cpus) + "|" + to_list(b.mems));
    }
    return out;
}

std::string plan_error(const Row& row) {
    try {
        plan(row);
    } catch (const PlacementError& e) {
        return e.what();
    }
    return "no error";
}

constexpr auto kNode = BindingMode::Node;
constexpr auto kSocket = BindingMode::Socket;
constexpr auto kExclusive = BindingMode::Exclusive;
constexpr auto kComplex = BindingMode::CoreComplex;

const char* const kH100Node0 = "0-55,112-167|0";
const char* const kH100Node1 = "56-111,168-223|1";

}  // namespace

TEST_CASE("binding modes read as torchrun spells them", "[placement][plan]") {
    CHECK(parse_binding_mode("node") == kNode);
    CHECK(parse_binding_mode("socket") == kSocket);
    CHECK(parse_binding_mode("exclusive") == kExclusive);
    CHECK(parse_binding_mode("core-complex") == kComplex);
    CHECK_FALSE(parse_binding_mode("core_complex"));
    CHECK_FALSE(parse_binding_mode(""));
    CHECK(to_text(kComplex) == "core-complex");
}

TEST_CASE("binding plans over every recorded machine and mode", "[placement][plan]") {
    const std::vector<Row> rows = {
        // DGX H100: GPUs 0-3 on node 0, 4-7 on node 1, 56 cores a socket.
        {"dgx-h100",
         kNode,
         8,
         true,
         {kH100Node0, kH100Node0, kH100Node0, kH100Node0, kH100Node1, kH100Node1, kH100Node1,
          kH100Node1}},
        {"dgx-h100",
         kSocket,
         8,
         true,
         {kH100Node0, kH100Node0, kH100Node0, kH100Node0, kH100Node1, kH100Node1, kH100Node1,
          kH100Node1}},
        {"dgx-h100",
         kExclusive,
         8,
         true,
         {"0-13,112-125|0", "14-27,126-139|0", "28-41,140-153|0", "42-55,154-167|0",
          "56-69,168-181|1", "70-83,182-195|1", "84-97,196-209|1", "98-111,210-223|1"}},
        {"dgx-h100", kComplex, 2, true, {kH100Node0, kH100Node0}},  // one L3 a socket
        // Fewer workers than GPUs: a node's CPUs are still shared among all its GPUs.
        {"dgx-h100", kExclusive, 2, true, {"0-13,112-125|0", "14-27,126-139|0"}},
        // EPYC: two GPUs a socket, four core complexes of four cores a socket.
        {"epyc-2s",
         kNode,
         4,
         true,
         {"0-15,32-47|0", "0-15,32-47|0", "16-31,48-63|1", "16-31,48-63|1"}},
        {"epyc-2s",
         kSocket,
         4,
         true,
         {"0-15,32-47|0", "0-15,32-47|0", "16-31,48-63|1", "16-31,48-63|1"}},
        {"epyc-2s",
         kExclusive,
         4,
         true,
         {"0-7,32-39|0", "8-15,40-47|0", "16-23,48-55|1", "24-31,56-63|1"}},
        {"epyc-2s",
         kComplex,
         4,
         true,
         {"0-3,32-35|0", "4-7,36-39|0", "16-19,48-51|1", "20-23,52-55|1"}},
        // CPU-only workers spread over the nodes in blocks.
        {"intel-2s",
         kNode,
         4,
         false,
         {"0-19,40-59|0", "0-19,40-59|0", "20-39,60-79|1", "20-39,60-79|1"}},
        {"intel-2s", kSocket, 3, false, {"0-19,40-59|0", "0-19,40-59|0", "20-39,60-79|1"}},
        {"intel-2s",
         kExclusive,
         4,
         false,
         {"0-9,40-49|0", "10-19,50-59|0", "20-29,60-69|1", "30-39,70-79|1"}},
        {"intel-2s", kExclusive, 3, false, {"0-9,40-49|0", "10-19,50-59|0", "20-39,60-79|1"}},
        {"intel-2s", kComplex, 2, false, {"0-19,40-59|0", "20-39,60-79|1"}},
        {"intel-2s", kNode, 1, false, {"0-19,40-59|0"}},
        // Inside a SLURM cpuset: only the CPUs the job was given.
        {"slurm-cpuset", kNode, 2, false, {"16-19,56-59|0", "20-23,60-63|1"}},
        {"slurm-cpuset", kSocket, 2, false, {"16-19,56-59|0", "20-23,60-63|1"}},
        {"slurm-cpuset",
         kExclusive,
         4,
         false,
         {"16-17,56-57|0", "18-19,58-59|0", "20-21,60-61|1", "22-23,62-63|1"}},
        {"slurm-cpuset", kExclusive, 3, false, {"16-17,56-57|0", "18-19,58-59|0", "20-23,60-63|1"}},
        {"slurm-cpuset", kComplex, 2, false, {"16-19,56-59|0", "20-23,60-63|1"}},
        // This machine: two vCPUs, one node; its GPU-like device has no known node.
        {"this-vm", kNode, 2, false, {"0-1|0", "0-1|0"}},
        {"this-vm", kSocket, 2, false, {"0-1|0", "0-1|0"}},
        {"this-vm", kExclusive, 2, false, {"0|0", "1|0"}},
        {"this-vm", kComplex, 2, false, {"0-1|0", "0-1|0"}},
        {"this-vm", kExclusive, 1, true, {"0-1|0"}},
        // No NUMA in the kernel: one node 0 of every CPU.
        {"no-numa-no-cache", kExclusive, 2, false, {"0-1|0", "2-3|0"}},
        {"no-numa-no-cache", kNode, 2, false, {"0-3|0", "0-3|0"}},
    };
    for (const auto& row : rows) {
        INFO(row.machine << " " << to_text(row.mode) << " x" << row.workers
                         << (row.gpus ? " with GPUs" : ""));
        std::vector<std::string> expected(row.expected.begin(), row.expected.end());
        CHECK(plan(row) == expected);
    }
}

TEST_CASE("binding plans that cannot be made say why", "[placement][plan]") {
    CHECK(plan_error({"dgx-h100", kNode, 9, true, {}}) ==
          "--numa-binding: 9 workers but 8 GPUs: worker 8 has no GPU to bind near");
    CHECK(plan_error({"this-vm", kExclusive, 3, false, {}}) ==
          "--numa-binding exclusive: NUMA node 0 has 2 physical cores this process may use for 3 "
          "workers: each needs one of its own");
    CHECK(plan_error({"slurm-cpuset", kExclusive, 10, false, {}}) ==
          "--numa-binding exclusive: NUMA node 0 has 4 physical cores this process may use for 5 "
          "workers: each needs one of its own");
    CHECK_THAT(plan_error({"no-numa-no-cache", kComplex, 1, false, {}}),
               Catch::Contains("no cache information for CPU 0"));
    CHECK(plan_error({"this-vm", kExclusive, 2, true, {}}) ==
          "--numa-binding: 2 workers but 1 GPU: worker 1 has no GPU to bind near");
}

TEST_CASE("binding plans stay inside the CPUs and memory nodes ptrun was given",
          "[placement][plan]") {
    RecordedMachine m("dgx-h100");
    auto topo = read_topology(m.sys());
    FakeBusIds driver(m);
    BindingRequest r;
    r.mode = kNode;
    r.workers = 8;
    r.gpus = locate_gpus(m.gpus(), driver, m.sys());
    r.allowed_cpus = parse_id_list("0-3,56-59");
    r.allowed_mems = parse_id_list("0");
    auto plan = plan_bindings(topo, r);
    CHECK(to_list(plan[0].cpus) == "0-3");
    CHECK(to_list(plan[0].mems) == "0");
    CHECK(to_list(plan[7].cpus) == "56-59");
    CHECK(plan[7].mems.empty());  // node 1's memory is not ours to prefer

    r.allowed_cpus = parse_id_list("0-3");
    CHECK_THROWS_WITH(plan_bindings(topo, r),
                      "--numa-binding: worker 4 (GPU 4 (0000:9a:00.0)) belongs on NUMA node 1, "
                      "which has no CPU this process may use (0-3)");
    r.mode = kSocket;
    CHECK_THROWS_WITH(plan_bindings(topo, r), Catch::Contains("the socket of NUMA node 1"));
}

TEST_CASE("a GPU with no known NUMA node binds only where one node is possible",
          "[placement][plan]") {
    RecordedMachine m("intel-2s");
    auto topo = read_topology(m.sys());
    BindingRequest r;
    r.workers = 1;
    r.gpus = {GpuPlace{"GPU 0 (0000:18:00.0)", std::nullopt}};
    r.allowed_cpus = m.allowed_cpus();
    CHECK_THROWS_WITH(plan_bindings(topo, r),
                      "--numa-binding: the kernel does not know the NUMA node of GPU 0 "
                      "(0000:18:00.0) (numa_node -1) and this process may use 2 NUMA nodes: no "
                      "node to bind near");
    r.allowed_cpus = parse_id_list("20-23");  // only node 1 is ours: the GPU can only be near it
    CHECK(to_list(plan_bindings(topo, r)[0].cpus) == "20-23");
    r.gpus = {GpuPlace{"GPU 0", 7}};
    CHECK_THROWS_WITH(plan_bindings(topo, r), Catch::Contains("NUMA node 7, which is not online"));
}

TEST_CASE("no workers, no bindings", "[placement][plan]") {
    RecordedMachine m("this-vm");
    BindingRequest r;
    r.allowed_cpus = m.allowed_cpus();
    CHECK(plan_bindings(read_topology(m.sys()), r).empty());
}
