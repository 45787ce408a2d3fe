#include <catch2/catch.hpp>

#include "env_fixtures.hpp"
#include "ptrun/schedulers/host_file.hpp"
#include "ptrun/schedulers/reader.hpp"

using namespace ptrun::schedulers;
namespace fx = ptrun::schedulers::fixtures;
using ptrun::env::EnvMap;
using ptrun::env::ParseError;

namespace {

Topology read(LauncherKind kind, const EnvMap& env,
              std::optional<std::string_view> host_file = std::nullopt) {
    return reader_for(kind).read(env, host_file);
}

}  // namespace

TEST_CASE("mpi reader: Open MPI's rank, sizes and nodes", "[schedulers][mpi]") {
    auto t = read(LauncherKind::Mpi, fx::open_mpi_rank3());
    CHECK(t.kind == LauncherKind::Mpi);
    CHECK(t.found_by == "OMPI_COMM_WORLD_SIZE");
    CHECK(t.rank == Sourced<int>{3, "OMPI_COMM_WORLD_RANK"});
    CHECK(t.world_size == Sourced<int>{4, "OMPI_COMM_WORLD_SIZE"});
    CHECK(t.local_rank == Sourced<int>{1, "OMPI_COMM_WORLD_LOCAL_RANK"});
    CHECK(t.local_world_size == Sourced<int>{2, "OMPI_COMM_WORLD_LOCAL_SIZE"});
    CHECK(t.nodes == Sourced<int>{2, "OMPI_MCA_orte_num_nodes"});
    CHECK_FALSE(t.node_rank);
    CHECK_FALSE(t.head_host);  // Open MPI names no host; HOSTNAME is not the master
    CHECK(t.job_id.value == "1044971521");
}

TEST_CASE("mpi reader: MASTER_ADDR and MASTER_PORT name the master", "[schedulers][mpi]") {
    auto env = fx::open_mpi_rank3();
    env["MASTER_ADDR"] = "node1";
    env["MASTER_PORT"] = "29600";
    auto t = read(LauncherKind::Mpi, env);
    REQUIRE(t.head_host);
    CHECK(*t.head_host == Sourced<std::string>{"node1", "MASTER_ADDR"});
    REQUIRE(t.port);
    CHECK(t.port->value == 29600);
}

TEST_CASE("mpi reader: without orte_num_nodes, the nodes are size / local size",
          "[schedulers][mpi]") {
    auto env = fx::open_mpi_rank3();
    env.erase("OMPI_MCA_orte_num_nodes");
    auto t = read(LauncherKind::Mpi, env);
    CHECK(t.nodes.value == 2);
    CHECK(t.nodes.origin == "OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE");
    env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "3";
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env),
                      Catch::Contains("OMPI_COMM_WORLD_LOCAL_SIZE=3 does not divide"));
}

TEST_CASE("mpi reader: MPICH's Hydra and Intel MPI", "[schedulers][mpi]") {
    auto t = read(LauncherKind::Mpi, fx::hydra_rank5());
    CHECK(t.found_by == "PMI_SIZE");
    CHECK(t.rank.value == 5);
    CHECK(t.world_size.value == 8);
    CHECK(t.local_rank == Sourced<int>{1, "MPI_LOCALRANKID"});
    CHECK(t.local_world_size == Sourced<int>{4, "MPI_LOCALNRANKS"});
    CHECK(t.nodes.value == 2);
    CHECK(t.head_host->value == "node1");
    auto env = fx::hydra_rank5();
    env.erase("MPI_LOCALNRANKS");
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("MPI_LOCALNRANKS unset"));
}

TEST_CASE("mpi reader: hostile values name the variable", "[schedulers][mpi][hostile]") {
    auto env = fx::open_mpi_rank3();
    env["OMPI_COMM_WORLD_RANK"] = env["PMIX_RANK"] = "4";  // not below the size
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("OMPI_COMM_WORLD_RANK=4") &&
                                                        Catch::Contains("OMPI_COMM_WORLD_SIZE=4"));
    env = fx::open_mpi_rank3();
    env["OMPI_COMM_WORLD_SIZE"] = "99999999999999999999";
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env),
                      Catch::Contains("OMPI_COMM_WORLD_SIZE='99999999999999999999'"));
    env = fx::open_mpi_rank3();
    env["OMPI_COMM_WORLD_LOCAL_RANK"] = "-1";
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env),
                      Catch::Contains("OMPI_COMM_WORLD_LOCAL_RANK='-1'"));
    env = fx::open_mpi_rank3();
    env["PMIX_RANK"] = "0";  // contradicts OMPI_COMM_WORLD_RANK
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env),
                      Catch::Contains("PMIX_RANK='0'") && Catch::Contains("contradicts"));
    env = fx::open_mpi_rank3();
    env["OMPI_MCA_orte_num_nodes"] = "5";  // more nodes than tasks
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("OMPI_MCA_orte_num_nodes=5"));
    env = fx::open_mpi_rank3();
    env["MASTER_ADDR"] = "node1; rm -rf /";
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("MASTER_ADDR="));
    env["MASTER_ADDR"] = std::string(5000, 'a');
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("at most 4096"));
    env = fx::open_mpi_rank3();
    env["MASTER_PORT"] = "0";
    CHECK_THROWS_WITH(read(LauncherKind::Mpi, env), Catch::Contains("MASTER_PORT='0'"));
}

TEST_CASE("flux reader: tasks, nodes and the even spread", "[schedulers][flux]") {
    auto t = read(LauncherKind::Flux, fx::flux_task2());
    CHECK(t.found_by == "FLUX_JOB_ID");
    CHECK(t.rank == Sourced<int>{2, "FLUX_TASK_RANK"});
    CHECK(t.world_size == Sourced<int>{4, "FLUX_JOB_SIZE"});
    CHECK(t.local_rank == Sourced<int>{0, "FLUX_TASK_LOCAL_ID"});
    CHECK(t.local_world_size.value == 2);
    CHECK(t.nodes == Sourced<int>{2, "FLUX_JOB_NNODES"});
    CHECK_FALSE(t.head_host);
    CHECK(t.job_id.value ==
          "\xc6\x92"
          "2hY3s5oW");
    auto per_node = read(LauncherKind::Flux, fx::flux_per_node());
    CHECK(per_node.world_size.value == 2);
    CHECK(per_node.head_host->value == "node1");
}

TEST_CASE("flux reader: hostile values name the variable", "[schedulers][flux][hostile]") {
    auto env = fx::flux_task2();
    env["FLUX_JOB_NNODES"] = "3";  // 4 tasks cannot spread evenly over 3 nodes
    CHECK_THROWS_WITH(read(LauncherKind::Flux, env), Catch::Contains("FLUX_JOB_NNODES=3"));
    env = fx::flux_task2();
    env["FLUX_TASK_LOCAL_ID"] = "2";
    CHECK_THROWS_WITH(read(LauncherKind::Flux, env), Catch::Contains("FLUX_TASK_LOCAL_ID=2"));
    env = fx::flux_task2();
    env.erase("FLUX_JOB_SIZE");
    CHECK_THROWS_WITH(read(LauncherKind::Flux, env), Catch::Contains("FLUX_JOB_SIZE unset"));
    env = fx::flux_task2();
    env["FLUX_TASK_RANK"] = "two";
    CHECK_THROWS_WITH(read(LauncherKind::Flux, env), Catch::Contains("FLUX_TASK_RANK='two'"));
}

TEST_CASE("pbs reader: the node file's hosts and PBS_NODENUM", "[schedulers][pbs]") {
    auto t = read(LauncherKind::Pbs, fx::pbs_node2(), std::string_view(fx::pbs_nodefile()));
    CHECK(t.nodes == Sourced<int>{3, "hosts in PBS_NODEFILE"});
    CHECK(t.node_rank == Sourced<int>{2, "PBS_NODENUM"});
    CHECK(t.rank.value == 2);
    CHECK(t.world_size.value == 3);
    CHECK(*t.head_host == Sourced<std::string>{"cn01", "first host of PBS_NODEFILE"});
    CHECK_FALSE(t.batch_script);
    CHECK(t.job_id.value == "1234.pbs-server");
    auto script = fx::pbs_node2();
    script.erase("PBS_NODENUM");
    CHECK(read(LauncherKind::Pbs, script, std::string_view("cn01\n")).batch_script);
}

TEST_CASE("pbs reader: hostile values name the variable", "[schedulers][pbs][hostile]") {
    CHECK_THROWS_WITH(read(LauncherKind::Pbs, fx::pbs_node2()),
                      Catch::Contains("PBS_NODEFILE unset"));
    CHECK_THROWS_WITH(read(LauncherKind::Pbs, fx::pbs_node2(), std::string_view("")),
                      Catch::Contains("PBS_NODEFILE='/var/spool/pbs/aux/1234.pbs-server'") &&
                          Catch::Contains("names no host"));
    CHECK_THROWS_WITH(
        read(LauncherKind::Pbs, fx::pbs_node2(), std::string_view("cn01\ncn\x1b[2J\n")),
        Catch::Contains("line 2") && Catch::Contains("not a host name"));
    auto env = fx::pbs_node2();
    env["PBS_NODENUM"] = "3";  // only 3 nodes: 0..2
    CHECK_THROWS_WITH(read(LauncherKind::Pbs, env, std::string_view(fx::pbs_nodefile())),
                      Catch::Contains("PBS_NODENUM=3"));
}

TEST_CASE("lsf reader: jsrun's ranks, the hosts without the launch node", "[schedulers][lsf]") {
    auto t = read(LauncherKind::Lsf, fx::lsf_task6(), std::string_view(fx::lsf_hostfile()));
    CHECK(t.rank == Sourced<int>{6, "JSM_NAMESPACE_RANK"});
    CHECK(t.world_size.value == 8);
    CHECK(t.local_rank.value == 2);
    CHECK(t.local_world_size.value == 4);
    CHECK(t.nodes.value == 2);
    REQUIRE(t.head_host);
    CHECK(t.head_host->value == "c01");
    CHECK_THAT(t.head_host->origin, Catch::Contains("LSB_DJOB_HOSTFILE"));
    auto env = fx::lsf_task6();  // no host file: LSB_MCPU_HOSTS
    env.erase("LSB_DJOB_HOSTFILE");
    t = read(LauncherKind::Lsf, env);
    CHECK(t.head_host->value == "c01");
    CHECK_THAT(t.head_host->origin, Catch::Contains("LSB_MCPU_HOSTS"));
    env["LSB_MCPU_HOSTS"] = "c07 4 c08 4";  // no launch node among them
    CHECK(read(LauncherKind::Lsf, env).head_host->value == "c07");
}

TEST_CASE("lsf reader: host lists are sized for 16,384 hosts", "[schedulers][lsf][scale]") {
    // 16,384 compute hosts of 64-byte names after the launch node: about 1.1 MB, far past the
    // 4096 bytes of a plain value (issue 35: a 300-host job was refused).
    constexpr int kHosts = 16384;
    auto env = fx::lsf_task6();
    env.erase("LSB_DJOB_HOSTFILE");
    env["JSM_NAMESPACE_SIZE"] = std::to_string(kHosts * 4);
    std::string pairs = "batch1 1";
    std::string file = "batch1\n";
    for (int i = 0; i < kHosts; ++i) {
        std::string host = "compute-node-" + std::to_string(100000 + i);
        host += std::string(64 - host.size(), 'x');
        pairs += " " + host + " 42";
        for (int slot = 0; slot < 4; ++slot) file += host + "\n";
    }
    env["LSB_MCPU_HOSTS"] = pairs;
    auto t = read(LauncherKind::Lsf, env);
    CHECK(t.nodes.value == kHosts);
    REQUIRE(t.head_host);
    CHECK(t.head_host->value.rfind("compute-node-100000", 0) == 0);
    t = read(LauncherKind::Lsf, env, std::string_view(file));
    CHECK(t.head_host->value.rfind("compute-node-100000", 0) == 0);
    // Past the bound: refused with the variable named, not read.
    env["LSB_MCPU_HOSTS"] = std::string(kMaxHostFileBytes + 1, 'a');
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env),
                      Catch::Contains("LSB_MCPU_HOSTS") &&
                          Catch::Contains("expected at most " + std::to_string(kMaxHostFileBytes)));
}

TEST_CASE("lsf reader: hostile values name the variable", "[schedulers][lsf][hostile]") {
    auto env = fx::lsf_task6();
    env.erase("LSB_DJOB_HOSTFILE");
    env["LSB_MCPU_HOSTS"] = "c01 4 c02";
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env), Catch::Contains("LSB_MCPU_HOSTS="));
    env["LSB_MCPU_HOSTS"] = "c01 4 c01 4";
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env), Catch::Contains("named twice"));
    env["LSB_MCPU_HOSTS"] = "c01 0";
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env), Catch::Contains("slot count '0'"));
    env["LSB_MCPU_HOSTS"] = "c01 4";  // one host for tasks on two nodes
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env), Catch::Contains("compute hosts"));
    env = fx::lsf_task6();
    env["JSM_NAMESPACE_LOCAL_SIZE"] = "9";
    CHECK_THROWS_WITH(read(LauncherKind::Lsf, env, std::string_view(fx::lsf_hostfile())),
                      Catch::Contains("JSM_NAMESPACE_LOCAL_SIZE=9"));
}

TEST_CASE("k8s reader: Kubeflow's PyTorchJob", "[schedulers][k8s]") {
    auto t = read(LauncherKind::K8s, fx::kubeflow_worker1());
    CHECK(t.nodes == Sourced<int>{3, "PET_NNODES"});
    CHECK(t.node_rank == Sourced<int>{2, "PET_NODE_RANK"});
    CHECK(t.world_size.value == 3);  // pods, one ptrun each
    CHECK(t.local_world_size.value == 1);
    CHECK(t.head_host->value == "pytorch-dist-master-0");
    CHECK(t.port->value == 23456);
    auto env = fx::kubeflow_worker1();  // an older operator: WORLD_SIZE and RANK only
    env.erase("PET_NNODES");
    env.erase("PET_NODE_RANK");
    t = read(LauncherKind::K8s, env);
    CHECK(t.nodes == Sourced<int>{3, "WORLD_SIZE"});
    CHECK(t.node_rank == Sourced<int>{2, "RANK"});
}

TEST_CASE("k8s reader: an indexed Job and a JobSet", "[schedulers][k8s]") {
    auto t = read(LauncherKind::K8s, fx::indexed_job_pod3());
    CHECK(t.node_rank == Sourced<int>{3, "JOB_COMPLETION_INDEX"});
    CHECK(t.nodes.value == 4);
    CHECK(t.head_host->value == "train-0.svc");
    t = read(LauncherKind::K8s, fx::jobset_pod1());
    CHECK(t.node_rank->value == 1);
    CHECK(t.head_host->value == "js-workers-0-0.js");
    CHECK_THAT(t.head_host->origin, Catch::Contains("JOBSET_NAME"));
    CHECK(t.job_id.value == "js");
}

TEST_CASE("k8s reader: hostile values name the variable", "[schedulers][k8s][hostile]") {
    auto env = fx::indexed_job_pod3();
    env.erase("PET_NNODES");
    CHECK_THROWS_WITH(read(LauncherKind::K8s, env), Catch::Contains("PET_NNODES unset"));
    env = fx::indexed_job_pod3();
    env["JOB_COMPLETION_INDEX"] = "4";
    CHECK_THROWS_WITH(read(LauncherKind::K8s, env), Catch::Contains("JOB_COMPLETION_INDEX=4"));
    env = fx::indexed_job_pod3();
    env["PET_NNODES"] = "x";
    CHECK_THROWS_WITH(read(LauncherKind::K8s, env), Catch::Contains("PET_NNODES='x'"));
    env = fx::jobset_pod1();
    env["JOB_INDEX"] = "1";
    CHECK_THROWS_WITH(read(LauncherKind::K8s, env), Catch::Contains("JOB_INDEX='1'"));
    env = fx::jobset_pod1();
    env["JOBSET_NAME"] = "js\n";
    CHECK_THROWS_AS(read(LauncherKind::K8s, env), ParseError);
}

TEST_CASE("slurm reader: SLURM's job behind the same interface", "[schedulers][slurm]") {
    EnvMap env{{"SLURM_JOB_ID", "2"},
               {"SLURM_STEP_ID", "0"},
               {"SLURM_PROCID", "3"},
               {"SLURM_LOCALID", "1"},
               {"SLURM_NODEID", "1"},
               {"SLURM_STEP_NUM_NODES", "2"},
               {"SLURM_STEP_NUM_TASKS", "4"},
               {"SLURM_STEP_NODELIST", "node[1-2]"},
               {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};
    auto t = read(LauncherKind::Slurm, env);
    CHECK(t.rank == Sourced<int>{3, "SLURM_PROCID"});
    CHECK(t.world_size == Sourced<int>{4, "SLURM_STEP_NUM_TASKS"});
    CHECK(t.local_world_size.value == 2);
    CHECK(t.node_rank == Sourced<int>{1, "SLURM_NODEID"});
    CHECK(t.head_host->value == "node1");
    CHECK(t.job_id == Sourced<std::string>{"2", "SLURM_JOB_ID"});
    CHECK(t.run_id->value == "slurm-2.0");
    CHECK(t.gpus == Sourced<int>{0, "SLURM_GPUS_ON_NODE"});
    env["SLURM_STEP_NODELIST"] = "node[2-1]";
    CHECK_THROWS_WITH(read(LauncherKind::Slurm, env),
                      Catch::Contains("SLURM_STEP_NODELIST='node[2-1]'"));
}
