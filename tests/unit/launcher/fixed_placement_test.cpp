#include "ptrun/launcher/cli/fixed_placement.hpp"

#include <catch2/catch.hpp>

#include "../slurm/env_columns.hpp"

using namespace ptrun::launcher;

TEST_CASE("fixed placement: a SLURM task's ranks become the worker's identity",
          "[launcher][slurm]") {
    auto job = ptrun::slurm::slurm_job_from_env(ptrun::slurm::test_env::column_E());
    REQUIRE(job);
    auto p = placement_from_slurm(*job);
    ptrun::env::WorkerIdentity id;
    id.role_name = "trainer";
    apply_placement(p, id);
    CHECK(id.rank == 3);
    CHECK(id.local_rank == 1);
    CHECK(id.world_size == 4);
    CHECK(id.local_world_size == 2);
    CHECK(id.group_rank == 1);
    CHECK(id.group_world_size == 2);
    CHECK(id.role_rank == 3);
    CHECK(id.role_world_size == 4);
    CHECK(id.role_name == "trainer");
    CHECK_FALSE(p.hosts_store);
}
