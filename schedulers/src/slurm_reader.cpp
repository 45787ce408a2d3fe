// SLURM behind the reader interface: slurm::slurm_job_from_env's job as a Topology. The launcher
// fills SLURM's options from it as from every other reader's (launcher/cli: environment_defaults),
// in SLURM's words (env_dialect: --slurm-mode, srun, PTRUN_SLURM_PORT, c10d at the head host).
#include <initializer_list>

#include "ptrun/slurm/parse_error.hpp"
#include "ptrun/slurm/slurm_job.hpp"
#include "ptrun/slurm/topology.hpp"
#include "ptrun/slurm/variable_read.hpp"
#include "ptrun/slurm/variables.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

namespace var = slurm::var;

using slurm::first_set;

std::optional<std::string> found_by(const env::EnvMap& env) {
    if (env.find(var::kJobId) == env.end()) return std::nullopt;
    return std::string(var::kJobId);
}

std::optional<std::string> no_host_file(const env::EnvMap&) { return std::nullopt; }

Topology read(const env::EnvMap& env, std::optional<std::string_view>) {
    std::optional<slurm::SlurmJob> job;
    try {
        job = slurm::slurm_job_from_env(env);
    } catch (const slurm::ParseError& e) {
        throw env::ParseError(e.what());
    }
    if (!job) throw env::ParseError(std::string(var::kJobId) + " unset: not inside SLURM");
    Topology t;
    t.kind = LauncherKind::Slurm;
    t.found_by = var::kJobId;
    t.job_id = {std::to_string(job->job_id), std::string(var::kJobId)};
    t.run_id = Sourced<std::string>{slurm::run_id(*job), "SLURM_JOB_ID.SLURM_STEP_ID"};
    t.gpus = Sourced<int>{job->gpus_on_node.value_or(0), std::string(var::kGpusOnNode)};
    const auto nodes = first_set(env, {var::kStepNumNodes, var::kNNodes, var::kJobNumNodes});
    const auto tasks = first_set(env, {var::kStepNumTasks, var::kNTasks, var::kNProcs});
    t.nodes = {job->num_nodes, nodes};
    t.rank = {job->proc_id, std::string(var::kProcId)};
    t.world_size = {job->ntasks, tasks};
    t.local_rank = {job->local_id, std::string(var::kLocalId)};
    t.local_world_size = {job->tasks_per_node.at(static_cast<std::size_t>(job->node_id)),
                          first_set(env, {var::kStepTasksPerNode, var::kTasksPerNode})};
    t.node_rank = Sourced<int>{job->node_id, std::string(var::kNodeId)};
    t.head_host = Sourced<std::string>{
        slurm::head_host(*job),
        "first host of " + first_set(env, {var::kStepNodeList, var::kJobNodeList, var::kNodeList})};
    t.batch_script = !job->step_id;
    check_topology(t);
    return t;
}

}  // namespace

const Reader& slurm_reader() {
    static const Reader r{LauncherKind::Slurm, found_by, no_host_file, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
