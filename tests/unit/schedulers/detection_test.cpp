#include <catch2/catch.hpp>

#include "env_fixtures.hpp"
#include "ptrun/schedulers/reader.hpp"

using namespace ptrun::schedulers;
namespace fx = ptrun::schedulers::fixtures;
using ptrun::env::EnvMap;

namespace {

std::optional<LauncherKind> detected(const EnvMap& env) {
    const auto* r = detect_reader(env);
    return r ? std::optional(r->kind) : std::nullopt;
}

EnvMap merged(EnvMap a, const EnvMap& b) {
    for (const auto& [k, v] : b) a[k] = v;
    return a;
}

}  // namespace

TEST_CASE("detection: each environment is found by its own variables", "[schedulers][detect]") {
    CHECK(detected({}) == std::nullopt);
    CHECK(detected(fx::open_mpi_rank3()) == LauncherKind::Mpi);
    CHECK(detected(fx::hydra_rank5()) == LauncherKind::Mpi);
    CHECK(detected(fx::flux_task2()) == LauncherKind::Flux);
    CHECK(detected(fx::pbs_node2()) == LauncherKind::Pbs);
    CHECK(detected(fx::lsf_task6()) == LauncherKind::Lsf);
    CHECK(detected(fx::kubeflow_worker1()) == LauncherKind::K8s);
    CHECK(detected(fx::indexed_job_pod3()) == LauncherKind::K8s);
    CHECK(detected({{"SLURM_JOB_ID", "1"}}) == LauncherKind::Slurm);
    // MASTER_ADDR alone (a torchrun worker's environment) is no launcher's, in a pod neither
    CHECK(detected({{"MASTER_ADDR", "node1"}, {"RANK", "0"}}) == std::nullopt);
    CHECK(detected({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"MASTER_ADDR", "db"}}) ==
          std::nullopt);
    CHECK(detected({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                    {"MASTER_ADDR", "m"},
                    {"WORLD_SIZE", "2"},
                    {"RANK", "1"}}) == LauncherKind::K8s);
}

TEST_CASE("detection: the launcher of this process wins over its allocation",
          "[schedulers][detect]") {
    const EnvMap slurm_batch{{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_NNODES", "2"}};
    CHECK(detected(merged(slurm_batch, fx::open_mpi_rank3())) == LauncherKind::Mpi);
    CHECK(detected(merged(slurm_batch, fx::flux_task2())) == LauncherKind::Flux);
    CHECK(detected(merged(fx::pbs_node2(), fx::open_mpi_rank3())) == LauncherKind::Mpi);
    auto lsf_batch = fx::lsf_task6();
    CHECK(detected(merged(fx::open_mpi_rank3(), lsf_batch)) == LauncherKind::Mpi);
}

TEST_CASE("detection: srun's own PMI-2 stays SLURM", "[schedulers][detect]") {
    // srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE equal to SLURM_PROCID and the step's tasks.
    EnvMap srun{{"SLURM_JOB_ID", "7"},
                {"SLURM_PROCID", "3"},
                {"SLURM_STEP_NUM_TASKS", "4"},
                {"PMI_RANK", "3"},
                {"PMI_SIZE", "4"}};
    CHECK(detected(srun) == LauncherKind::Slurm);
    // Hydra's proxies started by srun: PMI_SIZE is the MPI job's, not the step's
    srun["PMI_SIZE"] = "16";
    srun["PMI_RANK"] = "9";
    CHECK(detected(srun) == LauncherKind::Mpi);
}

TEST_CASE("detection: the readers come in the documented order", "[schedulers][detect]") {
    std::vector<LauncherKind> order;
    for (const auto& r : readers()) order.push_back(r.kind);
    CHECK(order == std::vector<LauncherKind>{LauncherKind::Mpi, LauncherKind::Lsf,
                                             LauncherKind::Flux, LauncherKind::Slurm,
                                             LauncherKind::Pbs, LauncherKind::K8s});
    for (const auto& r : readers()) {
        CHECK(parse_launcher_kind(launcher_kind_name(r.kind)) == r.kind);
        CHECK(&reader_for(r.kind) == &r);
    }
}
