#include "ptrun/slurm/slurm_job.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "env_columns.hpp"

using namespace ptrun::slurm;
using namespace ptrun::slurm::test_env;
using ptrun::env::EnvMap;
using Hosts = std::vector<std::string>;

namespace {

/// The what() of the ParseError that slurm_job_from_env(env) raises; fails the test if none.
std::string error_of(const EnvMap& env) {
    try {
        slurm_job_from_env(env);
    } catch (const ParseError& e) {
        return e.what();
    }
    FAIL("slurm_job_from_env did not throw");
    return {};
}

/// `env` with `name` set to `value` and every name in `drop` removed.
EnvMap with(EnvMap env, const std::string& name, const std::string& value,
            const std::vector<std::string>& drop = {}) {
    for (const auto& d : drop) env.erase(d);
    env.insert_or_assign(name, value);
    return env;
}

EnvMap without(EnvMap env, const std::vector<std::string>& drop) {
    for (const auto& d : drop) env.erase(d);
    return env;
}

SlurmJob two_nodes(std::uint32_t job_id, std::optional<std::uint32_t> step_id, int node_id,
                   int proc_id, int local_id, std::vector<int> tasks_per_node) {
    SlurmJob job;
    job.job_id = job_id;
    job.step_id = step_id;
    job.nodes = {"node1", "node2"};
    job.num_nodes = 2;
    job.node_id = node_id;
    job.proc_id = proc_id;
    job.local_id = local_id;
    job.tasks_per_node = std::move(tasks_per_node);
    job.ntasks = 0;
    for (int n : job.tasks_per_node) job.ntasks += n;
    job.cpus_on_node = 1;
    return job;
}

}  // namespace

TEST_CASE("slurm_job_from_env says not inside SLURM when SLURM_JOB_ID is unset", "[slurm]") {
    CHECK_FALSE(slurm_job_from_env({}));
    CHECK_FALSE(slurm_job_from_env({{"HOSTNAME", "node1"}, {"SLURM_NODELIST", "node[1-2]"}}));
    CHECK_FALSE(slurm_job_from_env(without(column_B(), {"SLURM_JOB_ID"})));
}

TEST_CASE("slurm_job_from_env reads the batch script of a 2-node job (column A)", "[slurm]") {
    CHECK(slurm_job_from_env(column_A()) == two_nodes(1, std::nullopt, 0, 0, 0, {1, 1}));
}

TEST_CASE("slurm_job_from_env reads task 0 of a step over the whole job (column B)", "[slurm]") {
    CHECK(slurm_job_from_env(column_B()) == two_nodes(1, 0, 0, 0, 0, {1, 1}));
}

TEST_CASE("slurm_job_from_env reads task 1 on the second node (column C)", "[slurm]") {
    CHECK(slurm_job_from_env(column_C()) == two_nodes(1, 0, 1, 1, 0, {1, 1}));
}

TEST_CASE("slurm_job_from_env takes the step variables over the job's in a sub-step (column D)",
          "[slurm]") {
    SlurmJob expected;
    expected.job_id = 1;
    expected.step_id = 1;
    expected.nodes = {"node1"};
    expected.num_nodes = 1;
    expected.ntasks = 1;
    expected.tasks_per_node = {1};
    expected.cpus_on_node = 1;
    auto env = column_D();
    REQUIRE(env.at("SLURM_JOB_NODELIST") == "node[1-2]");  // the job's, not the step's
    CHECK(slurm_job_from_env(env) == expected);
}

TEST_CASE("slurm_job_from_env reads task 3 of 2 tasks per node (column E)", "[slurm]") {
    auto expected = two_nodes(2, 0, 1, 3, 1, {2, 2});
    expected.cpus_on_node = 2;
    CHECK(slurm_job_from_env(column_E()) == expected);
}

TEST_CASE("slurm_job_from_env reads a job submitted with -N2 only (column F)", "[slurm]") {
    CHECK(slurm_job_from_env(column_F()) == two_nodes(5, 0, 1, 1, 0, {1, 1}));
}

TEST_CASE("slurm_job_from_env reads an uneven srun -N2 -n3 from a login node (column G)",
          "[slurm]") {
    CHECK(slurm_job_from_env(column_G()) == two_nodes(6, 0, 1, 2, 0, {2, 1}));
}

TEST_CASE("slurm_job_from_env reads the GPUs of a --gpus-per-node=2 job (column H)", "[slurm]") {
    auto expected = two_nodes(3, 0, 1, 1, 0, {1, 1});
    expected.gpus_on_node = 2;
    expected.cuda_visible_devices = 2;
    CHECK(slurm_job_from_env(column_H()) == expected);
}

TEST_CASE("slurm_job_from_env reads the CPUs of a --cpus-per-task=2 job (column I)", "[slurm]") {
    auto expected = two_nodes(4, 0, 1, 1, 0, {1, 1});
    expected.cpus_on_node = 2;
    CHECK(slurm_job_from_env(column_I()) == expected);
}

TEST_CASE("slurm_job_from_env refuses salloc's command on the login node (column J)", "[slurm]") {
    auto message = error_of(column_J());
    CHECK_THAT(message, Catch::StartsWith("SLURM_NODEID: not set, though SLURM_JOB_ID='7' is"));
    CHECK_THAT(message, Catch::Contains("salloc"));
}

TEST_CASE("slurm_job_from_env falls back to job variables outside a step", "[slurm]") {
    // The batch script of `sbatch -N2` has no SLURM_NTASKS: the count comes from tasks per node.
    auto env = without(column_A(), {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_JOB_NODELIST"});
    auto job = slurm_job_from_env(env);
    REQUIRE(job);
    CHECK(job->ntasks == 2);
    CHECK(job->nodes == Hosts{"node1", "node2"});  // from SLURM_NODELIST
    job = slurm_job_from_env(without(column_A(), {"SLURM_NNODES"}));
    CHECK(job->num_nodes == 2);  // from SLURM_JOB_NUM_NODES
    job = slurm_job_from_env(without(column_A(), {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"}));
    CHECK(job->num_nodes == 2);  // from the node list
    job = slurm_job_from_env(without(column_B(), {"SLURM_STEP_ID"}));
    CHECK(job->step_id == 0u);  // from SLURM_STEPID
}

TEST_CASE("slurm_job_from_env never reads job variables a step variable overrides", "[slurm]") {
    auto env = column_B();
    env["SLURM_JOB_NODELIST"] = "garbage[";
    env["SLURM_NODELIST"] = "garbage[";
    env["SLURM_NNODES"] = "x";
    env["SLURM_JOB_NUM_NODES"] = "x";
    env["SLURM_NTASKS"] = "x";
    env["SLURM_NPROCS"] = "x";
    env["SLURM_TASKS_PER_NODE"] = "x";
    CHECK(slurm_job_from_env(env) == two_nodes(1, 0, 0, 0, 0, {1, 1}));
}

TEST_CASE("slurm_job_from_env ignores HOSTNAME and the srun host", "[slurm]") {
    auto env = column_C();
    env["HOSTNAME"] = "elsewhere";
    env["SLURM_SRUN_COMM_HOST"] = "login";
    env["SLURM_LAUNCH_NODE_IPADDR"] = "10.0.0.1";
    CHECK(slurm_job_from_env(env) == slurm_job_from_env(column_C()));
}

TEST_CASE("slurm_job_from_env names the variable and the value of a malformed node list",
          "[slurm]") {
    auto env = with(column_B(), "SLURM_STEP_NODELIST", "node[2-1]");
    CHECK_THAT(error_of(env),
               Catch::StartsWith("SLURM_STEP_NODELIST='node[2-1]': invalid range '2-1'"));
    try {
        slurm_job_from_env(env);
    } catch (const ParseError& e) {
        CHECK(e.pos == 5);
        CHECK(e.reason == "invalid range '2-1' (start above end)");
    }
    CHECK_THAT(error_of(with(column_A(), "SLURM_JOB_NODELIST", "node[1-2")),
               Catch::StartsWith("SLURM_JOB_NODELIST='node[1-2': unclosed '['"));
    CHECK_THAT(error_of(with(column_A(), "SLURM_NODELIST", "gpu-[1-2]-ib", {"SLURM_JOB_NODELIST"})),
               Catch::StartsWith("SLURM_NODELIST='gpu-[1-2]-ib': text '-ib'"));
    CHECK_THAT(error_of(with(column_B(), "SLURM_STEP_NODELIST", "")),
               Catch::StartsWith("SLURM_STEP_NODELIST='': lists no host"));
    CHECK_THAT(error_of(with(column_B(), "SLURM_STEP_NODELIST", "n[0-99999999]")),
               Catch::Contains("expands to more than 65536 hosts"));
    CHECK_THAT(error_of(with(column_B(), "SLURM_STEP_NODELIST", "node1,node1")),
               Catch::StartsWith("SLURM_STEP_NODELIST='node1,node1': lists host 'node1' twice"));
}

TEST_CASE("slurm_job_from_env names the variable and the value of a malformed task count",
          "[slurm]") {
    CHECK_THAT(error_of(with(column_B(), "SLURM_STEP_TASKS_PER_NODE", "1(x2")),
               Catch::StartsWith("SLURM_STEP_TASKS_PER_NODE='1(x2': expected ')' at offset 4"));
    CHECK_THAT(error_of(with(column_A(), "SLURM_TASKS_PER_NODE", "1(x0)")),
               Catch::StartsWith("SLURM_TASKS_PER_NODE='1(x0)': repeat (x0)"));
}

TEST_CASE("slurm_job_from_env names the variable and the value of every malformed integer",
          "[slurm]") {
    struct Case {
        EnvMap base;
        const char* name;
        const char* value;
        std::vector<std::string> drop;
    };
    const std::vector<Case> cases = {
        {column_B(), "SLURM_JOB_ID", "abc", {}},
        {column_B(), "SLURM_JOB_ID", "-1", {}},
        {column_B(), "SLURM_JOB_ID", "4294967296", {}},
        {column_B(), "SLURM_STEP_ID", "x", {}},
        {column_B(), "SLURM_STEPID", "1.5", {"SLURM_STEP_ID"}},
        {column_B(), "SLURM_STEP_NUM_NODES", "0", {}},
        {column_B(), "SLURM_STEP_NUM_NODES", "two", {}},
        {column_A(), "SLURM_NNODES", "", {}},
        {column_A(), "SLURM_JOB_NUM_NODES", "-2", {"SLURM_NNODES"}},
        {column_B(), "SLURM_STEP_NUM_TASKS", "0", {}},
        {column_A(), "SLURM_NTASKS", "2x", {}},
        {column_A(), "SLURM_NPROCS", "99999999999", {"SLURM_NTASKS"}},
        {column_C(), "SLURM_NODEID", "-1", {}},
        {column_C(), "SLURM_NODEID", "one", {}},
        {column_C(), "SLURM_PROCID", " 1", {}},
        {column_C(), "SLURM_LOCALID", "0x0", {}},
        {column_H(), "SLURM_GPUS_ON_NODE", "two", {}},
        {column_H(), "SLURM_GPUS_ON_NODE", "-2", {}},
        {column_I(), "SLURM_CPUS_ON_NODE", "0", {}},
    };
    for (const auto& c : cases) {
        auto message = error_of(with(c.base, c.name, c.value, c.drop));
        CAPTURE(c.name, c.value, message);
        CHECK_THAT(message, Catch::StartsWith(std::string(c.name) + "='" + c.value +
                                              "': expected an integer from "));
    }
}

TEST_CASE("slurm_job_from_env names both variables when they contradict each other", "[slurm]") {
    CHECK(error_of(with(column_B(), "SLURM_STEP_NODELIST", "node[1-3]")) ==
          "SLURM_STEP_NODELIST='node[1-3]': lists 3 hosts but SLURM_STEP_NUM_NODES='2'");
    CHECK(error_of(
              with(column_B(), "SLURM_STEP_TASKS_PER_NODE", "1(x3)", {"SLURM_STEP_NUM_NODES"})) ==
          "SLURM_STEP_TASKS_PER_NODE='1(x3)': gives 3 nodes but "
          "SLURM_STEP_NODELIST='node[1-2]' lists 2");
    CHECK(error_of(with(column_B(), "SLURM_STEP_NUM_TASKS", "3")) ==
          "SLURM_STEP_NUM_TASKS='3': but SLURM_STEP_TASKS_PER_NODE='1(x2)' adds up to 2 tasks");
    CHECK(error_of(with(column_C(), "SLURM_NODEID", "2")) ==
          "SLURM_NODEID='2': is not below the 2 nodes of SLURM_STEP_NODELIST='node[1-2]'");
    CHECK(error_of(with(column_C(), "SLURM_PROCID", "2")) ==
          "SLURM_PROCID='2': is not below the 2 tasks of the step");
    CHECK(error_of(with(column_E(), "SLURM_LOCALID", "2")) ==
          "SLURM_LOCALID='2': is not below the 2 tasks that SLURM_STEP_TASKS_PER_NODE='2(x2)' "
          "gives node 1");
}

TEST_CASE("slurm_job_from_env catches a sub-step read without its step variables", "[slurm]") {
    // Gotcha 9 of the notes: SLURM_NODELIST stays the job's while SLURM_NNODES is the step's.
    auto env = without(column_D(), {"SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES",
                                    "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE"});
    CHECK(error_of(env) == "SLURM_JOB_NODELIST='node[1-2]': lists 2 hosts but SLURM_NNODES='1'");
}

TEST_CASE("slurm_job_from_env names every alternative of a missing variable", "[slurm]") {
    CHECK_THAT(error_of(without(column_B(),
                                {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})),
               Catch::StartsWith("SLURM_STEP_NODELIST / SLURM_JOB_NODELIST / SLURM_NODELIST: "
                                 "not set, though SLURM_JOB_ID='1' is"));
    CHECK_THAT(error_of(without(column_B(), {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})),
               Catch::StartsWith("SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE: not set"));
    CHECK_THAT(error_of(without(column_B(), {"SLURM_PROCID"})),
               Catch::StartsWith("SLURM_PROCID: not set"));
    CHECK_THAT(error_of(without(column_B(), {"SLURM_LOCALID"})),
               Catch::StartsWith("SLURM_LOCALID: not set"));
}

TEST_CASE("slurm_job_from_env counts CUDA_VISIBLE_DEVICES without failing on odd values",
          "[slurm]") {
    CHECK(slurm_job_from_env(with(column_B(), "CUDA_VISIBLE_DEVICES", "0,1,2,3"))
              ->cuda_visible_devices == 4);
    CHECK(slurm_job_from_env(with(column_B(), "CUDA_VISIBLE_DEVICES", ""))->cuda_visible_devices ==
          0);
    CHECK_FALSE(slurm_job_from_env(column_B())->cuda_visible_devices);
    auto devices = [](const char* value) {
        return slurm_job_from_env(with(column_B(), "CUDA_VISIBLE_DEVICES", value))
            ->cuda_visible_devices;
    };
    // The launcher's rules (ptrun::env::parse_cuda_visible_devices), not a second reading.
    CHECK(devices("NoDevFiles") == 0);
    CHECK(devices("0,1,-1,2") == 2);
    CHECK(devices("0,0") == 0);                             // a repeated device hides every device
    CHECK(devices("GPU-8f6c2e0a-1b2c,MIG-0b1c2d3e") == 1);  // the first entry decides the kind
}
