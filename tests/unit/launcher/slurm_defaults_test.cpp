#include "ptrun/launcher/cli/slurm_defaults.hpp"

#include <catch2/catch.hpp>

#include "../slurm/env_columns.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/explain.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

using namespace ptrun::launcher;
namespace cols = ptrun::slurm::test_env;
using ptrun::env::EnvMap;

namespace {

/// `ptrun ARGS train` inside the SLURM task `env` (PET_ variables come from `env` too).
SlurmDefaults infer(const EnvMap& env, std::vector<std::string> args = {}) {
    args.push_back("train");
    return apply_slurm_defaults(std::get<LaunchOptions>(parse_command_line(args, env)), env);
}

void check_slurm(const LaunchOptions& o, Option key, const std::string& value,
                 const std::string& origin) {
    INFO("option " << option_name(key));
    CHECK(o.at(key).value == value);
    CHECK(o.at(key).source == Source::Slurm);
    CHECK(o.at(key).origin == origin);
}

/// explain()'s table for what `d` resolves to (with its per-rank placement, if any).
std::string explain_of(const SlurmDefaults& d) {
    return explain(resolve(d.options, HostFacts{}), d.placement ? &*d.placement : nullptr,
                   d.options);
}

}  // namespace

TEST_CASE("slurm defaults: nothing changes outside SLURM", "[launcher][slurm]") {
    auto d = infer({});
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::Nnodes).source == Source::Default);
    CHECK(d.options.at(Option::NprocPerNode).value == "1");
    CHECK(d.options.at(Option::SlurmMode).value == "off");
    CHECK(d.warnings.empty());
}

TEST_CASE("slurm defaults: one task per node fills the topology from the step",
          "[launcher][slurm]") {
    auto d = infer(cols::column_C());  // srun -N2 --ntasks-per-node=1, task 1 on node2, job 1
    const auto& o = d.options;
    CHECK_FALSE(d.placement);
    CHECK(o.at(Option::SlurmMode).value == "per-node");
    check_slurm(o, Option::Nnodes, "2", "SLURM_STEP_NUM_NODES");
    check_slurm(o, Option::NodeRank, "1", "SLURM_NODEID");
    check_slurm(o, Option::RdzvBackend, "c10d", "inside SLURM");
    check_slurm(o, Option::RdzvEndpoint, "node1:29501",
                "first host of SLURM_STEP_NODELIST : 29500 + SLURM_JOB_ID % 2000");
    check_slurm(o, Option::RdzvId, "slurm-1.0", "SLURM_JOB_ID.SLURM_STEP_ID");
    check_slurm(o, Option::NprocPerNode, "1",
                "no GPU in SLURM_GPUS_ON_NODE or CUDA_VISIBLE_DEVICES");
    CHECK(o.at(Option::MasterAddr).source == Source::Default);
}

TEST_CASE("slurm defaults: workers per node are the GPUs SLURM gave the node",
          "[launcher][slurm]") {
    auto env = cols::column_H();  // --gpus-per-node=2
    check_slurm(infer(env).options, Option::NprocPerNode, "2", "SLURM_GPUS_ON_NODE");
    env.erase("SLURM_GPUS_ON_NODE");
    env["CUDA_VISIBLE_DEVICES"] = "0,1,2";
    check_slurm(infer(env).options, Option::NprocPerNode, "3", "devices in CUDA_VISIBLE_DEVICES");
    env["SLURM_GPUS_ON_NODE"] = "0";
    check_slurm(infer(env).options, Option::NprocPerNode, "3", "devices in CUDA_VISIBLE_DEVICES");
}

TEST_CASE("slurm defaults: explicit flags and PET_ variables win", "[launcher][slurm]") {
    auto env = cols::column_H();
    env["PET_NNODES"] = "1:3";
    auto d = infer(
        env, {"--nproc-per-node", "5", "--rdzv-endpoint", "login1:1234", "--rdzv-id", "mine"});
    const auto& o = d.options;
    CHECK(o.at(Option::NprocPerNode).value == "5");
    CHECK(o.at(Option::NprocPerNode).source == Source::Flag);
    CHECK(o.at(Option::Nnodes).value == "1:3");
    CHECK(o.at(Option::Nnodes).source == Source::PetEnv);
    CHECK(o.at(Option::RdzvEndpoint).value == "login1:1234");
    CHECK(o.at(Option::RdzvId).value == "mine");
    check_slurm(o, Option::NodeRank, "1", "SLURM_NODEID");
}

TEST_CASE("slurm defaults: the sub-step's variables win over the job's", "[launcher][slurm]") {
    auto d = infer(cols::column_D());  // srun -N1 -n1 inside a 2-node job
    check_slurm(d.options, Option::Nnodes, "1", "SLURM_STEP_NUM_NODES");
    check_slurm(d.options, Option::RdzvEndpoint, "node1:29501",
                "first host of SLURM_STEP_NODELIST : 29500 + SLURM_JOB_ID % 2000");
    check_slurm(d.options, Option::RdzvId, "slurm-1.1", "SLURM_JOB_ID.SLURM_STEP_ID");
    auto c = resolve(d.options, HostFacts{});
    CHECK(c.nnodes.max == 1);
    CHECK(c.master_port == 29501);
}

TEST_CASE("slurm defaults: PTRUN_SLURM_PORT replaces the derived port", "[launcher][slurm]") {
    auto env = cols::column_B();
    env["PTRUN_SLURM_PORT"] = "31000";
    check_slurm(infer(env).options, Option::RdzvEndpoint, "node1:31000",
                "first host of SLURM_STEP_NODELIST : PTRUN_SLURM_PORT");
    env["PTRUN_SLURM_PORT"] = "70000";
    CHECK_THROWS_WITH(infer(env),
                      Catch::Contains("PTRUN_SLURM_PORT='70000'") && Catch::Contains("1 to 65535"));
}

TEST_CASE("slurm defaults: more tasks than nodes is one-task-per-rank mode", "[launcher][slurm]") {
    auto d = infer(cols::column_E());  // sbatch -N2 --ntasks-per-node=2: task 3 on node2, job 2
    REQUIRE(d.placement);
    const auto& p = *d.placement;
    CHECK(d.options.at(Option::SlurmMode).value == "per-rank");
    CHECK(d.options.at(Option::SlurmMode).origin ==
          "SLURM_STEP_NUM_TASKS='4' > SLURM_STEP_NUM_NODES='2'");
    CHECK(p.rank == 3);
    CHECK(p.local_rank == 1);
    CHECK(p.world_size == 4);
    CHECK(p.local_world_size == 2);
    CHECK(p.group_rank == 1);
    CHECK(p.group_world_size == 2);
    CHECK_FALSE(p.hosts_store);
    check_slurm(d.options, Option::NprocPerNode, "1", "one task per rank");
    check_slurm(d.options, Option::MasterAddr, "node1", "first host of SLURM_STEP_NODELIST");
    check_slurm(d.options, Option::MasterPort, "29502", "29500 + SLURM_JOB_ID % 2000");
    check_slurm(d.options, Option::RdzvId, "slurm-2.0", "SLURM_JOB_ID.SLURM_STEP_ID");
    CHECK(d.options.at(Option::Nnodes).source ==
          Source::Default);  // no rendezvous: one agent per task

    auto c = resolve(d.options, HostFacts{});
    CHECK(c.nproc_per_node == 1);
    CHECK(c.master_addr == "node1");
    CHECK(c.master_port == 29502);
    CHECK(c.run_id == "slurm-2.0");
}

TEST_CASE("slurm defaults: the first task of the first node hosts the per-rank store",
          "[launcher][slurm]") {
    auto env = cols::column_E();
    env["SLURM_NODEID"] = "0";
    env["SLURM_PROCID"] = "0";
    env["SLURM_LOCALID"] = "0";
    CHECK(infer(env).placement->hosts_store);
    env["SLURM_PROCID"] = "2";  // arbitrary distribution: still node 0's first task
    CHECK(infer(env).placement->hosts_store);
    env["SLURM_LOCALID"] = "1";
    CHECK_FALSE(infer(env).placement->hosts_store);
}

TEST_CASE("slurm defaults: uneven tasks per node give this node's share", "[launcher][slurm]") {
    auto d = infer(cols::column_G());  // srun -N2 -n3: "2,1", task 2 alone on node2
    REQUIRE(d.placement);
    CHECK(d.placement->rank == 2);
    CHECK(d.placement->local_world_size == 1);
    CHECK(d.placement->world_size == 3);
}

TEST_CASE("slurm defaults: --rdzv-endpoint moves the per-rank store", "[launcher][slurm]") {
    auto d = infer(cols::column_E(), {"--rdzv-endpoint", "login1:4000"});
    check_slurm(d.options, Option::MasterAddr, "login1", "--rdzv-endpoint");
    check_slurm(d.options, Option::MasterPort, "4000", "--rdzv-endpoint");
    d = infer(cols::column_E(), {"--rdzv-endpoint", "[fd00::1]"});
    CHECK(d.options.at(Option::MasterAddr).value == "fd00::1");
    CHECK(d.options.at(Option::MasterPort).value == "29502");
    // The one endpoint grammar (endpoint.hpp), as for every other mode: a bare IPv6 address is a
    // host; port 0 names no port the workers could connect to.
    d = infer(cols::column_E(), {"--rdzv-endpoint", "fd00::2"});
    CHECK(d.options.at(Option::MasterAddr).value == "fd00::2");
    CHECK(d.options.at(Option::MasterPort).value == "29502");
    CHECK_THROWS_WITH(
        infer(cols::column_E(), {"--rdzv-endpoint", "login1:0"}),
        Catch::Contains("--rdzv-endpoint 'login1:0'") && Catch::Contains("PORT from 1 to 65535"));
    CHECK_THROWS_WITH(
        infer(cols::column_E(), {"--rdzv-endpoint", ":4000"}),
        Catch::Contains("--rdzv-endpoint ':4000'") && Catch::Contains("a host before the colon"));
    CHECK_THROWS_WITH(infer(cols::column_E(), {"--rdzv-endpoint", "login1:70000"}),
                      Catch::Contains("PORT from 0 to 65535"));
}

TEST_CASE("slurm defaults: --slurm-mode overrides the detection", "[launcher][slurm]") {
    auto d = infer(cols::column_E(), {"--slurm-mode", "per-node"});  // every task is an agent
    CHECK_FALSE(d.placement);
    check_slurm(d.options, Option::Nnodes, "4", "SLURM_STEP_NUM_TASKS (one agent per task)");
    check_slurm(d.options, Option::NodeRank, "3", "SLURM_PROCID (one agent per task)");
    d = infer(cols::column_B(), {"--slurm-mode", "per-rank"});
    REQUIRE(d.placement);
    CHECK(d.placement->world_size == 2);
    CHECK(d.options.at(Option::SlurmMode).source == Source::Flag);
    auto env = cols::column_E();
    env["PET_SLURM_MODE"] = "off";
    d = infer(env);
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::NprocPerNode).source == Source::Default);
    CHECK_THROWS_WITH(infer(cols::column_B(), {"--slurm-mode", "rank"}),
                      Catch::Contains("--slurm-mode 'rank'") &&
                          Catch::Contains("auto, per-node, per-rank or off"));
}

TEST_CASE("slurm defaults: options per-rank mode cannot honour are refused by name",
          "[launcher][slurm]") {
    auto env = cols::column_E();
    CHECK_THROWS_WITH(infer(env, {"--nproc-per-node", "2"}),
                      Catch::Contains("--nproc-per-node '2'"));
    CHECK_THROWS_WITH(infer(env, {"--nnodes", "2"}), Catch::Contains("--nnodes '2'"));
    CHECK_THROWS_WITH(infer(env, {"--node-rank", "1"}), Catch::Contains("--node-rank '1'"));
    CHECK_THROWS_WITH(infer(env, {"--max-restarts", "3"}), Catch::Contains("--max-restarts '3'"));
    CHECK_THROWS_WITH(infer(env, {"--standalone"}), Catch::Contains("--standalone"));
    CHECK_NOTHROW(infer(env, {"--nproc-per-node", "1", "--max-restarts", "0"}));
    CHECK_THROWS_AS(infer(cols::column_A(), {"--slurm-mode", "per-rank"}),
                    UsageError);  // batch script
}

TEST_CASE("slurm defaults: a malformed SLURM value names the variable and the value",
          "[launcher][slurm]") {
    auto env = cols::column_C();
    env["SLURM_STEP_NODELIST"] = "node[2-1]";
    CHECK_THROWS_WITH(infer(env), Catch::Contains("SLURM_STEP_NODELIST='node[2-1]'"));
    env = cols::column_C();
    env["SLURM_NODEID"] = "one";
    CHECK_THROWS_WITH(infer(env), Catch::Contains("SLURM_NODEID='one'"));
    env = cols::column_E();
    env["SLURM_STEP_TASKS_PER_NODE"] = "2(x0)";
    CHECK_THROWS_AS(infer(env), UsageError);
    CHECK_THROWS_WITH(infer(env), Catch::Contains("SLURM_STEP_TASKS_PER_NODE='2(x0)'"));
    env = cols::column_H();
    env["SLURM_GPUS_ON_NODE"] = "-2";
    CHECK_THROWS_WITH(infer(env), Catch::Contains("SLURM_GPUS_ON_NODE='-2'"));
    env["SLURM_GPUS_ON_NODE"] = "-2";  // --slurm-mode off ignores SLURM entirely
    CHECK_NOTHROW(infer(env, {"--slurm-mode", "off"}));
}

TEST_CASE("slurm defaults: a multi-node batch script outside srun is refused",
          "[launcher][slurm]") {
    CHECK_THROWS_WITH(infer(cols::column_A()),
                      Catch::Contains("SLURM_NNODES='2'") && Catch::Contains("srun ptrun"));
    auto d = infer(cols::column_A(), {"--nnodes", "1"});
    CHECK(d.options.at(Option::SlurmMode).value == "per-node");
    check_slurm(d.options, Option::NodeRank, "0", "batch script outside srun: this node only");
    auto env = cols::column_A();  // sbatch -N1: fine, one node
    env["SLURM_JOB_NODELIST"] = env["SLURM_NODELIST"] = "node1";
    env["SLURM_NNODES"] = env["SLURM_JOB_NUM_NODES"] = "1";
    env["SLURM_TASKS_PER_NODE"] = "2";
    d = infer(env);
    check_slurm(d.options, Option::Nnodes, "1", "batch script outside srun: this node only");
    check_slurm(d.options, Option::RdzvId, "slurm-1", "SLURM_JOB_ID.SLURM_STEP_ID");
    CHECK_FALSE(d.placement);  // the batch script runs once, whatever the task count
}

TEST_CASE("slurm defaults: salloc's login shell infers nothing and says so", "[launcher][slurm]") {
    auto d = infer(cols::column_J());
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::Nnodes).source == Source::Default);
    CHECK(d.options.at(Option::SlurmMode).value == "off");
    REQUIRE(d.warnings.size() == 1);
    CHECK_THAT(d.warnings[0], Catch::Contains("srun ptrun"));
}

TEST_CASE("slurm defaults: --standalone takes only the GPU count from SLURM", "[launcher][slurm]") {
    auto d = infer(cols::column_H(), {"--standalone"});
    check_slurm(d.options, Option::NprocPerNode, "2", "SLURM_GPUS_ON_NODE");
    CHECK(d.options.at(Option::Nnodes).source == Source::Default);
    CHECK(d.options.at(Option::RdzvEndpoint).source == Source::Default);
}

TEST_CASE("explain names the SLURM variable behind each value", "[launcher][slurm][explain]") {
    auto d = infer(cols::column_E());
    auto text = explain_of(d);
    CHECK_THAT(text, Catch::Contains("one task per rank"));
    CHECK_THAT(text, Catch::Contains("(SLURM_PROCID)"));
    CHECK_THAT(text, Catch::Contains("(SLURM_LOCALID)"));
    CHECK_THAT(text, Catch::Contains("(SLURM_STEP_NUM_TASKS)"));
    CHECK_THAT(text, Catch::Contains("node1:29502"));
    CHECK_THAT(text, Catch::Contains("slurm-2.0"));

    auto single = cols::column_D();
    single["SLURM_GPUS_ON_NODE"] = "4";
    d = infer(single);
    text = explain_of(d);
    CHECK_THAT(text, Catch::Contains("(SLURM_STEP_NUM_NODES)"));
    CHECK_THAT(text, Catch::Contains("(SLURM_GPUS_ON_NODE)"));
    CHECK_THAT(text, Catch::Contains("node1:29501"));
    CHECK_THAT(text, Catch::Contains("one agent per node"));
}

TEST_CASE("slurm defaults: etcd-v2 takes the topology from SLURM and the members from the user",
          "[launcher][slurm][etcd]") {
    auto d = infer(cols::column_C(), {"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1,e2"});
    check_slurm(d.options, Option::Nnodes, "2", "SLURM_STEP_NUM_NODES");
    check_slurm(d.options, Option::NodeRank, "1", "SLURM_NODEID");
    check_slurm(d.options, Option::RdzvId, "slurm-1.0", "SLURM_JOB_ID.SLURM_STEP_ID");
    CHECK(d.options.at(Option::RdzvEndpoint).value == "e1,e2");
    auto c = resolve(d.options, HostFacts{});
    CHECK(c.rdzv_backend == RdzvBackend::Etcd);
    CHECK(c.etcd.endpoints == std::vector<HostPort>{{"e1", 2379}, {"e2", 2379}});
    // never the head host's c10d endpoint: etcd's members are the user's to name
    d = infer(cols::column_C(), {"--rdzv-backend", "etcd"});
    CHECK(d.options.at(Option::RdzvEndpoint).source == Source::Default);
    CHECK_THROWS_WITH(resolve(d.options, HostFacts{}), Catch::Contains("needs --rdzv-endpoint"));
    // one task per rank starts no rendezvous: etcd there is refused by name
    CHECK_THROWS_WITH(
        infer(cols::column_E(), {"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1"}),
        Catch::Contains("--rdzv-backend 'etcd-v2': one-task-per-rank mode"));
}

TEST_CASE("explain: etcd-v2 lists the members and elects the coordinator",
          "[launcher][slurm][explain][etcd]") {
    auto text = explain_of(infer({}, {"--rdzv-backend", "etcd", "--rdzv-endpoint",
                                      "https://e1,e2:2380", "--nnodes", "1:2"}));
    CHECK_THAT(text, Catch::Contains("rdzv backend      etcd-v2  "));
    CHECK_THAT(text, Catch::Contains("etcd              e1:2379, e2:2380 (https)  "));
    CHECK_THAT(text, Catch::Contains("(flag --rdzv-endpoint)\n"));
    CHECK_THAT(text, Catch::Contains("assigned at rendezvous"));
    CHECK_THAT(text, Catch::Contains("store             none: the coordinator is elected among "
                                     "the agents (no node hosts the store)"));
    CHECK_THAT(explain_of(infer({}, {"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1",
                                     "--rdzv-conf", "protocol=http"})),
               Catch::Contains("e1:2379 (http)") &&
                   Catch::Contains("(flag --rdzv-endpoint, flag --rdzv-conf)"));
}
