#include "ptrun/launcher/cli/launcher_env_defaults.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "../schedulers/env_fixtures.hpp"
#include "../slurm/env_columns.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/rdzv_backend.hpp"
#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/explain.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/launcher/plan/launch_plan.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
namespace fx = ptrun::schedulers::fixtures;
namespace cols = ptrun::slurm::test_env;
using ptrun::env::EnvMap;

namespace {

/// A host file reader over fixed texts: path -> text; any other path is an error.
ReadHostFile files(std::map<std::string, std::string> texts = {}) {
    return [texts](std::string_view var, const std::string& path) {
        auto it = texts.find(path);
        if (it == texts.end()) throw UsageError(std::string(var) + "='" + path + "': no such file");
        return it->second;
    };
}

/// `ptrun ARGS train` in the environment `env` (PET_ variables come from `env` too).
LaunchDefaults infer(const EnvMap& env, std::vector<std::string> args = {},
                     const ReadHostFile& read = files()) {
    args.push_back("train");
    return apply_launcher_env(std::get<LaunchOptions>(parse_command_line(args, env)), env, read);
}

void check_env(const LaunchOptions& o, Option key, const std::string& value,
               const std::string& origin) {
    INFO("option " << option_name(key));
    CHECK(o.at(key).value == value);
    CHECK(o.at(key).source == Source::LauncherEnv);
    CHECK(o.at(key).origin == origin);
}

std::string explain_of(const LaunchDefaults& d) {
    return explain(resolve(d.options, HostFacts{}), d.placement ? &*d.placement : nullptr,
                   d.options);
}

/// Open MPI's `mpirun -np 4 ptrun` on one host: rank `rank`.
EnvMap open_mpi_one_host(int rank) {
    return {
        {"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
        {"OMPI_MCA_orte_num_nodes", "1"},    {"OMPI_MCA_ess_base_jobid", "1044971521"}};
}

}  // namespace

TEST_CASE("launcher env: nothing found changes nothing", "[launcher][launcher-env]") {
    auto d = infer({});
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::LauncherEnv).value == "off");
    CHECK(d.options.at(Option::SlurmMode).value == "off");
    CHECK(d.options.at(Option::Nnodes).source == Source::Default);
    CHECK(d.warnings.empty());
}

TEST_CASE("launcher env: SLURM is read exactly as apply_slurm_defaults reads it",
          "[launcher][launcher-env][slurm]") {
    for (const auto& env : {cols::column_B(), cols::column_C(), cols::column_E(), cols::column_G(),
                            cols::column_H(), cols::column_J()}) {
        auto d = infer(env);
        auto s =
            apply_slurm_defaults(std::get<LaunchOptions>(parse_command_line({"train"}, env)), env);
        for (const auto& spec : option_table()) {
            if (spec.key == Option::LauncherEnv) continue;
            INFO("option " << spec.dashed);
            CHECK(d.options.at(spec.key).value == s.options.at(spec.key).value);
            CHECK(d.options.at(spec.key).origin == s.options.at(spec.key).origin);
        }
        CHECK(d.placement == s.placement);
        CHECK(d.warnings == s.warnings);
    }
    CHECK(infer(cols::column_E()).options.at(Option::LauncherEnv).value == "slurm");
    CHECK(infer(cols::column_J()).options.at(Option::LauncherEnv).value == "off");  // salloc
}

TEST_CASE("launcher env: --launcher-env off and forced environments", "[launcher][launcher-env]") {
    auto d = infer(cols::column_E(), {"--launcher-env", "off"});
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::NprocPerNode).source == Source::Default);
    CHECK(d.options.at(Option::SlurmMode).value == "off");
    auto env = fx::open_mpi_rank3();
    env["PET_LAUNCHER_ENV"] = "off";
    CHECK_FALSE(infer(env).placement);
    CHECK_THROWS_WITH(
        infer({}, {"--launcher-env", "slurm"}),
        Catch::Contains("--launcher-env 'slurm'") && Catch::Contains("SLURM_JOB_ID unset"));
    CHECK_THROWS_WITH(infer({}, {"--launcher-env", "flux"}),
                      Catch::Contains("FLUX_JOB_SIZE unset"));
    CHECK_THROWS_WITH(infer({}, {"--launcher-env", "lsd"}),
                      Catch::Contains("--launcher-env 'lsd'") &&
                          Catch::Contains("auto, slurm, mpi, flux, pbs, lsf, k8s or off"));
    // SLURM present, MPI forced: the MPI launcher's ranks
    auto both = cols::column_C();
    for (const auto& [k, v] : fx::open_mpi_rank3()) both[k] = v;
    both["MASTER_ADDR"] = "node1";
    d = infer(both);
    CHECK(d.options.at(Option::LauncherEnv).value == "mpi");
    CHECK(infer(both, {"--launcher-env", "slurm"}).options.at(Option::LauncherEnv).value ==
          "slurm");
}

TEST_CASE("launcher env: mpirun -np 4 ptrun on one host is one task per rank",
          "[launcher][launcher-env][mpi]") {
    auto d = infer(open_mpi_one_host(2));
    REQUIRE(d.placement);
    const auto& p = *d.placement;
    CHECK(p.rank == 2);
    CHECK(p.local_rank == 2);
    CHECK(p.world_size == 4);
    CHECK(p.local_world_size == 4);
    CHECK(p.group_rank == 0);
    CHECK(p.group_world_size == 1);
    CHECK_FALSE(p.hosts_store);
    CHECK(infer(open_mpi_one_host(0)).placement->hosts_store);
    check_env(d.options, Option::NprocPerNode, "1", "one task per rank");
    check_env(d.options, Option::MasterAddr, "127.0.0.1", "one node: OMPI_MCA_orte_num_nodes=1");
    check_env(d.options, Option::MasterPort, std::to_string(29500 + 1044971521 % 2000),
              "29500 + OMPI_MCA_ess_base_jobid % 2000");
    check_env(d.options, Option::RdzvId, "mpi-1044971521", "OMPI_MCA_ess_base_jobid");
    CHECK(d.options.at(Option::LauncherEnv).value == "mpi");
    auto c = resolve(d.options, HostFacts{});
    CHECK(c.nproc_per_node == 1);
    CHECK(c.master_addr == "127.0.0.1");
}

TEST_CASE("launcher env: MPI across nodes needs a master host", "[launcher][launcher-env][mpi]") {
    CHECK_THROWS_WITH(
        infer(fx::open_mpi_rank3()),
        Catch::Contains("MASTER_ADDR") && Catch::Contains("OMPI_MCA_orte_num_nodes=2"));
    auto env = fx::open_mpi_rank3();
    env["MASTER_ADDR"] = "node1";
    auto d = infer(env);
    REQUIRE(d.placement);
    CHECK(d.placement->group_rank == 1);  // ranks 2-3 on the second node (by slot)
    CHECK(d.placement->origins.at("node rank") ==
          "(OMPI_COMM_WORLD_RANK - OMPI_COMM_WORLD_LOCAL_RANK) / OMPI_COMM_WORLD_LOCAL_SIZE");
    check_env(d.options, Option::MasterAddr, "node1", "MASTER_ADDR");
    CHECK_NOTHROW(infer(fx::open_mpi_rank3(), {"--master-addr", "node1"}));
    // mapped by node (round robin): rank 3 is node 1's second, not in a block
    env["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
    CHECK_THROWS_WITH(infer(env), Catch::Contains("not in equal blocks"));
}

TEST_CASE("launcher env: one MPI task per node is that node's agent",
          "[launcher][launcher-env][mpi]") {
    auto d = infer(fx::open_mpi_per_node(), {"--nproc-per-node", "2"});
    CHECK_FALSE(d.placement);
    const auto& o = d.options;
    check_env(o, Option::Nnodes, "2", "OMPI_MCA_orte_num_nodes");
    check_env(o, Option::NodeRank, "1", "OMPI_COMM_WORLD_RANK (one task per node)");
    check_env(o, Option::MasterAddr, "node1", "MASTER_ADDR");
    check_env(o, Option::MasterPort, std::to_string(29500 + 77),
              "29500 + OMPI_MCA_ess_base_jobid % 2000");
    CHECK(o.at(Option::RdzvBackend).source == Source::Default);  // static: node 0 hosts
    CHECK(o.at(Option::NprocPerNode).source == Source::Flag);
    auto c = resolve(o, HostFacts{});
    CHECK(c.nnodes.max == 2);
    CHECK(c.node_rank == 1);
    CHECK(c.rdzv_backend == RdzvBackend::Static);
    CHECK(c.rendezvous_store.host == "node1");
    CHECK(c.rdzv.is_host == false);
    // the user's endpoint is kept: c10d there
    d = infer(fx::open_mpi_per_node(), {"--rdzv-endpoint", "login1:4000"});
    CHECK(d.options.at(Option::MasterAddr).source == Source::Default);
    // one host, one task: a single node, nothing to meet
    auto single = open_mpi_one_host(0);
    single["OMPI_COMM_WORLD_SIZE"] = single["OMPI_COMM_WORLD_LOCAL_SIZE"] = "1";
    d = infer(single, {"--nproc-per-node", "2"});
    CHECK_FALSE(d.placement);
    check_env(d.options, Option::Nnodes, "1", "OMPI_MCA_orte_num_nodes");
    CHECK(d.options.at(Option::MasterAddr).source == Source::Default);
    CHECK_FALSE(resolve(d.options, HostFacts{}).multi_node());
}

TEST_CASE("launcher env: an explicit --nproc-per-node makes every MPI task an agent",
          "[launcher][launcher-env][mpi]") {
    // mpirun -np 2 ptrun --nproc-per-node 2 on one host: two agents, four workers
    auto env = open_mpi_one_host(1);
    env["OMPI_COMM_WORLD_SIZE"] = env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
    auto d = infer(env, {"--nproc-per-node", "2"});
    CHECK_FALSE(d.placement);
    check_env(d.options, Option::Nnodes, "2", "OMPI_COMM_WORLD_SIZE (one agent per task)");
    check_env(d.options, Option::NodeRank, "1", "OMPI_COMM_WORLD_RANK (one agent per task)");
    check_env(d.options, Option::MasterAddr, "127.0.0.1", "one node: OMPI_MCA_orte_num_nodes=1");
    CHECK(d.options.at(Option::SlurmMode).origin == "--nproc-per-node '2': one agent per task");
    CHECK(d.options.at(Option::LauncherEnv).origin == "OMPI_COMM_WORLD_SIZE");
    auto c = resolve(d.options, HostFacts{});
    CHECK(c.rdzv_backend == RdzvBackend::Static);
    CHECK(c.rdzv.is_host == false);  // node 0 hosts, not every agent on the host
}

TEST_CASE("launcher env: --slurm-mode forces the mode under other launchers too",
          "[launcher][launcher-env][mpi]") {
    auto d = infer(open_mpi_one_host(3), {"--slurm-mode", "per-node"});
    CHECK_FALSE(d.placement);
    check_env(d.options, Option::Nnodes, "4", "OMPI_COMM_WORLD_SIZE (one agent per task)");
    check_env(d.options, Option::NodeRank, "3", "OMPI_COMM_WORLD_RANK (one agent per task)");
    d = infer(fx::open_mpi_per_node(), {"--slurm-mode", "per-rank"});
    REQUIRE(d.placement);
    CHECK(d.placement->group_rank == 1);
}

TEST_CASE("launcher env: options per-rank mode cannot honour are refused by name",
          "[launcher][launcher-env][mpi]") {
    auto env = open_mpi_one_host(1);
    CHECK_THROWS_WITH(infer(env, {"--nproc-per-node", "2", "--slurm-mode", "per-rank"}),
                      Catch::Contains("--nproc-per-node '2'") && Catch::Contains("MPI task"));
    CHECK_THROWS_WITH(infer(env, {"--nnodes", "2"}), Catch::Contains("--nnodes '2'"));
    CHECK_THROWS_WITH(infer(env, {"--node-rank", "1"}), Catch::Contains("--node-rank '1'"));
    CHECK_THROWS_WITH(infer(env, {"--max-restarts", "2"}), Catch::Contains("--max-restarts '2'"));
    CHECK_THROWS_WITH(infer(env, {"--standalone"}), Catch::Contains("--standalone"));
    CHECK_THROWS_WITH(infer(env, {"--rdzv-endpoint", "h:0"}), Catch::Contains("PORT from 1"));
    auto d = infer(env, {"--rdzv-endpoint", "login1:4000"});
    check_env(d.options, Option::MasterAddr, "login1", "--rdzv-endpoint");
    check_env(d.options, Option::MasterPort, "4000", "--rdzv-endpoint");
}

TEST_CASE("launcher env: placement options are refused per rank, naming the launcher",
          "[launcher][launcher-env][mpi]") {
    for (const auto& flag : {"--numa-binding", "--virtual-local-rank"}) {
        std::vector<std::string> args{flag};
        if (std::string(flag) == "--numa-binding") args.push_back("node");
        auto d = infer(open_mpi_one_host(1), args);
        REQUIRE(d.placement);
        CHECK_THROWS_WITH(make_launch_plan(d.options, d.placement, HostFacts{}, {}),
                          Catch::Contains(std::string(flag) + " with one MPI task per rank") &&
                              Catch::Contains("let the launcher bind the tasks"));
    }
}

TEST_CASE("launcher env: a malformed value is a usage error naming it",
          "[launcher][launcher-env][hostile]") {
    auto env = open_mpi_one_host(1);
    env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1x";
    CHECK_THROWS_AS(infer(env), UsageError);
    CHECK_THROWS_WITH(infer(env), Catch::Contains("OMPI_COMM_WORLD_LOCAL_RANK='1x'") &&
                                      Catch::Contains("--launcher-env off to ignore MPI"));
    CHECK_NOTHROW(infer(env, {"--launcher-env", "off"}));
    auto pbs = fx::pbs_node2();
    CHECK_THROWS_WITH(infer(pbs), Catch::Contains("PBS_NODEFILE='/var/spool/pbs/aux/") &&
                                      Catch::Contains("no such file"));
}

TEST_CASE("launcher env: PBS, one ptrun per node from pbsdsh -u", "[launcher][launcher-env][pbs]") {
    auto read = files({{"/var/spool/pbs/aux/1234.pbs-server", fx::pbs_nodefile()}});
    auto d = infer(fx::pbs_node2(), {}, read);
    CHECK_FALSE(d.placement);
    check_env(d.options, Option::Nnodes, "3", "hosts in PBS_NODEFILE");
    check_env(d.options, Option::NodeRank, "2", "PBS_NODENUM");
    check_env(d.options, Option::MasterAddr, "cn01", "first host of PBS_NODEFILE");
    check_env(d.options, Option::RdzvId, "pbs-1234.pbs-server", "PBS_JOBID");
    // The mode's reason says where it came from, not "hosts in PBS_NODEFILE=3 = hosts in ...".
    CHECK(d.options.at(Option::SlurmMode).origin == "PBS_NODENUM: one ptrun per node");
    auto script = fx::pbs_node2();
    script.erase("PBS_NODENUM");  // the job script of a 3-node job
    CHECK_THROWS_WITH(infer(script, {}, read), Catch::Contains("pbsdsh -u ptrun"));
    d = infer(script, {"--nnodes", "1"}, read);
    check_env(d.options, Option::NodeRank, "0", "the job script: this node only");
}

TEST_CASE("launcher env: LSF's jsrun, one task per rank", "[launcher][launcher-env][lsf]") {
    auto read = files({{"/home/u/.lsbatch/4242.hostfile", fx::lsf_hostfile()}});
    auto d = infer(fx::lsf_task6(), {}, read);
    REQUIRE(d.placement);
    CHECK(d.placement->rank == 6);
    CHECK(d.placement->group_rank == 1);
    check_env(d.options, Option::MasterAddr, "c01",
              "second host of LSB_DJOB_HOSTFILE, the first being the launch node");
    check_env(d.options, Option::MasterPort, std::to_string(29500 + 4242 % 2000),
              "29500 + LSB_JOBID % 2000");
}

TEST_CASE("launcher env: Kubernetes pods meet at MASTER_ADDR, static",
          "[launcher][launcher-env][k8s]") {
    auto d = infer(fx::kubeflow_worker1());
    CHECK_FALSE(d.placement);
    CHECK(d.options.at(Option::Nnodes).source == Source::PetEnv);  // PET_NNODES as torchrun
    CHECK(d.options.at(Option::NodeRank).source == Source::PetEnv);
    check_env(d.options, Option::MasterAddr, "pytorch-dist-master-0", "MASTER_ADDR");
    CHECK(d.options.at(Option::SlurmMode).origin == "PET_NODE_RANK: one ptrun per pod");
    check_env(d.options, Option::MasterPort, "23456", "MASTER_PORT");
    auto c = resolve(d.options, HostFacts{});
    CHECK(c.rdzv_backend == RdzvBackend::Static);
    CHECK(c.nproc_per_node == 2);  // PET_NPROC_PER_NODE
    CHECK(c.node_rank == 2);
    CHECK(c.rendezvous_store.host == "pytorch-dist-master-0");
    d = infer(fx::jobset_pod1());
    check_env(d.options, Option::NodeRank, "1", "JOB_COMPLETION_INDEX");
    check_env(d.options, Option::MasterAddr, "js-workers-0-0.js",
              "JobSet's first pod: JOBSET_NAME, REPLICATED_JOB_NAME");
    auto no_master = fx::indexed_job_pod3();
    no_master.erase("MASTER_ADDR");
    CHECK_THROWS_WITH(infer(no_master), Catch::Contains("MASTER_ADDR"));
}

TEST_CASE("launcher env: Flux, and explain names the environment and every variable",
          "[launcher][launcher-env][flux][explain]") {
    auto env = fx::flux_task2();
    env["MASTER_ADDR"] = "node1";
    auto d = infer(env);
    REQUIRE(d.placement);
    CHECK(d.options.at(Option::RdzvId).value == "flux-__2hY3s5oW");
    auto text = explain_of(d);
    CHECK_THAT(text, Catch::Contains("one task per rank (Flux)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_JOB_SIZE=4 > FLUX_JOB_NNODES=2)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_JOB_ID)"));
    CHECK_THAT(text, Catch::Contains("launch env"));
    CHECK_THAT(text, Catch::Contains("(FLUX_TASK_RANK)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_TASK_LOCAL_ID)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_JOB_SIZE)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_JOB_NNODES)"));
    CHECK_THAT(text, Catch::Contains("(MASTER_ADDR, 29500 + FLUX_JOB_ID % 2000)"));
    auto per_node = infer(fx::flux_per_node());
    text = explain_of(per_node);
    CHECK_THAT(text, Catch::Contains("one agent per node (Flux)"));
    CHECK_THAT(text, Catch::Contains("(FLUX_JOB_NNODES)"));
    CHECK_THAT(text, Catch::Contains("FLUX_TASK_RANK (one task per node)"));
}

TEST_CASE("launcher env: the real host file reader", "[launcher][launcher-env][hostfile]") {
    test::TempDir dir;
    const auto file = (dir.path / "nodes").string();
    std::ofstream(file) << "cn01\ncn02\n";
    CHECK(read_host_file("PBS_NODEFILE", file) == "cn01\ncn02\n");
    CHECK_THROWS_WITH(
        read_host_file("PBS_NODEFILE", file + ".missing"),
        Catch::Contains("PBS_NODEFILE='" + file + ".missing'") && Catch::Contains("No such file"));
    CHECK_THROWS_WITH(read_host_file("PBS_NODEFILE", dir.path.string()),
                      Catch::Contains("not a regular file"));
}
