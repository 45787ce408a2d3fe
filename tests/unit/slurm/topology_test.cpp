#include "ptrun/slurm/topology.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "env_columns.hpp"

using namespace ptrun::slurm;
using namespace ptrun::slurm::test_env;

namespace {

SlurmJob job_of(const ptrun::env::EnvMap& env) {
    auto job = slurm_job_from_env(env);
    REQUIRE(job);
    return *job;
}

}  // namespace

TEST_CASE("head_host is the first host of the step node list in every column", "[slurm]") {
    for (auto env : {column_A(), column_B(), column_C(), column_D(), column_E(), column_F(),
                     column_G(), column_H(), column_I()}) {
        CHECK(head_host(job_of(env)) == "node1");
    }
}

TEST_CASE("head_host ignores HOSTNAME and the srun host", "[slurm]") {
    auto env = column_C();
    env["HOSTNAME"] = "batchhost";
    env["SLURM_SRUN_COMM_HOST"] = "login";
    env["SLURM_STEP_NODELIST"] = "gpu[07-08]";
    env["SLURM_JOB_NODELIST"] = "gpu[01-08]";
    CHECK(head_host(job_of(env)) == "gpu07");
    CHECK_THROWS_AS(head_host(SlurmJob{}), std::invalid_argument);
}

TEST_CASE("derive_port is 29500 plus the job id modulo 2000", "[slurm]") {
    CHECK(derive_port(0) == 29500);
    CHECK(derive_port(1) == 29501);
    CHECK(derive_port(1999) == 31499);
    CHECK(derive_port(2000) == 29500);
    CHECK(derive_port(123456) == 29500 + 123456 % 2000);
    CHECK(derive_port(0xFFFFFFFF) == 29500 + 0xFFFFFFFFu % 2000);
}

TEST_CASE("derive_port stays unprivileged and below the ephemeral range for every job id",
          "[slurm]") {
    for (std::uint32_t id = 0; id < 5000; ++id) {
        auto port = derive_port(id);
        REQUIRE(port >= 1024);
        REQUIRE(port < 32768);
    }
    CHECK(derive_port(41) != derive_port(42));
}

TEST_CASE("run_id names the job and the step when there is one", "[slurm]") {
    CHECK(run_id(job_of(column_A())) == "slurm-1");
    CHECK(run_id(job_of(column_B())) == "slurm-1.0");
    CHECK(run_id(job_of(column_D())) == "slurm-1.1");
    CHECK(run_id(job_of(column_G())) == "slurm-6.0");
}

TEST_CASE("gpus_on_node prefers what CUDA_VISIBLE_DEVICES shows over SLURM's count", "[slurm]") {
    CHECK(gpus_on_node(job_of(column_H())) == 2);
    CHECK_FALSE(gpus_on_node(job_of(column_B())));
    auto env = column_H();
    env["CUDA_VISIBLE_DEVICES"] = "1";
    CHECK(gpus_on_node(job_of(env)) == 1);
    env.erase("CUDA_VISIBLE_DEVICES");
    CHECK(gpus_on_node(job_of(env)) == 2);
}

TEST_CASE("detect_task_mode finds one task per node in columns A to D, F, H and I", "[slurm]") {
    for (auto env :
         {column_A(), column_B(), column_C(), column_D(), column_F(), column_H(), column_I()}) {
        CHECK(detect_task_mode(job_of(env)) == TaskMode::PerNode);
    }
}

TEST_CASE("detect_task_mode finds one task per rank when tasks outnumber nodes", "[slurm]") {
    CHECK(detect_task_mode(job_of(column_E())) == TaskMode::PerRank);
    CHECK(detect_task_mode(job_of(column_G())) == TaskMode::PerRank);
}

TEST_CASE("rank_layout takes the ranks of 2 tasks per node from SLURM (column E)", "[slurm]") {
    ptrun::env::RankPlace expected;
    expected.rank = 3;
    expected.local_rank = 1;
    expected.world_size = 4;
    expected.local_world_size = 2;
    expected.group_rank = 1;
    expected.group_world_size = 2;
    CHECK(rank_layout(job_of(column_E())) == expected);
}

TEST_CASE("rank_layout gives an uneven node its own local world size (column G)", "[slurm]") {
    auto layout = rank_layout(job_of(column_G()));
    CHECK(layout.rank == 2);
    CHECK(layout.local_rank == 0);
    CHECK(layout.world_size == 3);
    CHECK(layout.local_world_size == 1);
    CHECK(layout.group_rank == 1);
    CHECK(layout.group_world_size == 2);
    auto env = column_G();
    env["SLURM_NODEID"] = "0";
    env["SLURM_PROCID"] = "1";
    env["SLURM_LOCALID"] = "1";
    CHECK(rank_layout(job_of(env)).local_world_size == 2);
}
