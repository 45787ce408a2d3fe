#include "ptrun/launcher/cli/slurm_defaults.hpp"

#include <initializer_list>
#include <string_view>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/rdzv_backend.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/slurm/slurm_job.hpp"
#include "ptrun/slurm/topology.hpp"
#include "ptrun/slurm/variable_read.hpp"
#include "ptrun/slurm/variables.hpp"

namespace ptrun::launcher {
namespace {

namespace var = slurm::var;

using slurm::first_set;

/// "NAME='value'" as SLURM set it, for messages.
std::string shown(const env::EnvMap& env, const std::string& name) {
    auto it = env.find(name);
    return name + "='" + (it == env.end() ? std::string() : it->second) + "'";
}

std::string as_given(const LaunchOptions& o, Option key) { return as_given(key, o.at(key)); }

/// Sets option `key` from SLURM unless the user gave it.
void fill(LaunchOptions& o, Option key, std::string value, std::string origin) {
    if (o.given(key)) return;
    o.at(key) = RawValue{std::move(value), Source::Slurm, std::move(origin)};
}

/// Records the mode used: its name replaces a given "auto", or becomes a detected value.
void set_mode(LaunchOptions& o, SlurmMode mode, std::string why) {
    if (o.given(Option::SlurmMode)) {
        o.at(Option::SlurmMode).value = slurm_mode_name(mode);
        return;
    }
    o.at(Option::SlurmMode) =
        RawValue{std::string(slurm_mode_name(mode)), Source::Slurm, std::move(why)};
}

/// The variable names the job's values came from.
struct Names {
    std::string nodes, nodelist, tasks, step;
    explicit Names(const env::EnvMap& env)
        : nodes(first_set(env, {var::kStepNumNodes, var::kNNodes, var::kJobNumNodes})),
          nodelist(first_set(env, {var::kStepNodeList, var::kJobNodeList, var::kNodeList})),
          tasks(first_set(env, {var::kStepNumTasks, var::kNTasks, var::kNProcs})),
          step(first_set(env, {var::kStepId, var::kStepIdOld})) {}
};

std::uint16_t port_for(const slurm::SlurmJob& job, const env::EnvMap& env, std::string& origin) {
    if (auto it = env.find(kSlurmPortVar); it != env.end()) {
        auto v = env::parse_int(it->second);
        if (!v || *v < 1 || *v > 65535) {
            throw UsageError(std::string(kSlurmPortVar) + "='" + it->second +
                             "': expected a port from 1 to 65535");
        }
        origin = kSlurmPortVar;
        return static_cast<std::uint16_t>(*v);
    }
    origin = "29500 + SLURM_JOB_ID % 2000";
    return slurm::derive_port(job.job_id);
}

void fill_nproc(LaunchOptions& o, const slurm::SlurmJob& job) {
    if (job.gpus_on_node && *job.gpus_on_node > 0) {
        fill(o, Option::NprocPerNode, std::to_string(*job.gpus_on_node),
             std::string(var::kGpusOnNode));
    } else if (job.cuda_visible_devices && *job.cuda_visible_devices > 0) {
        fill(o, Option::NprocPerNode, std::to_string(*job.cuda_visible_devices),
             "devices in " + std::string(var::kCudaVisibleDevices));
    } else {
        fill(o, Option::NprocPerNode, "1", "no GPU in SLURM_GPUS_ON_NODE or CUDA_VISIBLE_DEVICES");
    }
}

void fill_per_node(LaunchOptions& o, const slurm::SlurmJob& job, const env::EnvMap& env,
                   const Names& n) {
    std::string port_origin;
    auto port = port_for(job, env, port_origin);
    if (!job.step_id) {
        if (job.num_nodes > 1 && !o.given(Option::Nnodes)) {
            throw UsageError(
                shown(env, n.nodes) + " but ptrun runs in the batch script itself (" + n.step +
                " unset), on one node only: start it on every node with 'srun ptrun ...', "
                "or pass --nnodes 1");
        }
        fill(o, Option::Nnodes, "1", "batch script outside srun: this node only");
        fill(o, Option::NodeRank, "0", "batch script outside srun: this node only");
    } else if (job.ntasks > job.num_nodes) {  // --slurm-mode per-node with several tasks per node
        fill(o, Option::Nnodes, std::to_string(job.ntasks), n.tasks + " (one agent per task)");
        fill(o, Option::NodeRank, std::to_string(job.proc_id),
             std::string(var::kProcId) + " (one agent per task)");
    } else {
        fill(o, Option::Nnodes, std::to_string(job.num_nodes), n.nodes);
        fill(o, Option::NodeRank, std::to_string(job.node_id), std::string(var::kNodeId));
    }
    fill(o, Option::RdzvBackend, std::string(backend_name(RdzvBackend::C10d)), "inside SLURM");
    fill(o, Option::RdzvEndpoint, slurm::head_host(job) + ":" + std::to_string(port),
         "first host of " + n.nodelist + " : " + port_origin);
}

FixedPlacement fill_per_rank(LaunchOptions& o, const slurm::SlurmJob& job, const env::EnvMap& env,
                             const Names& n, const std::string& why) {
    auto refuse = [&](Option key, const std::string& hint) {
        throw UsageError(as_given(o, key) + ": one-task-per-rank mode (" + why +
                         ") runs one worker per SLURM task; " + hint);
    };
    if (o.given(Option::NprocPerNode) && o.at(Option::NprocPerNode).value != "1") {
        refuse(Option::NprocPerNode,
               "drop it, or start one task per node (srun --ntasks-per-node=1)");
    }
    for (auto key : {Option::Nnodes, Option::NodeRank}) {
        if (o.given(key))
            refuse(key, "ranks come from SLURM_PROCID; drop it or pass --slurm-mode per-node");
    }
    if (o.given(Option::MaxRestarts) && o.at(Option::MaxRestarts).value != "0") {
        refuse(Option::MaxRestarts,
               "one rank cannot restart alone; use one task per node for restarts, or requeue");
    }
    fill(o, Option::NprocPerNode, "1", "one task per rank");
    std::string port_origin;
    std::string host = slurm::head_host(job);
    std::string host_origin = "first host of " + n.nodelist;
    int port = port_for(job, env, port_origin);
    if (o.given(Option::RdzvEndpoint)) {
        const auto& raw = o.at(Option::RdzvEndpoint).value;
        auto given_endpoint = split_endpoint(raw, option_name(Option::RdzvEndpoint));
        if (given_endpoint.port == 0) {  // the workers' MASTER_PORT: no server picks one here
            throw UsageError("--rdzv-endpoint '" + raw +
                             "': expected HOST[:PORT] with PORT from 1 to 65535 (the workers "
                             "connect to it: one-task-per-rank mode starts no agent's store)");
        }
        host = given_endpoint.host;
        host_origin = port_origin = "--rdzv-endpoint";
        if (given_endpoint.port) port = *given_endpoint.port;
    }
    fill(o, Option::MasterAddr, host, host_origin);
    fill(o, Option::MasterPort, std::to_string(port), port_origin);

    auto placement = placement_from_slurm(job);
    placement.origins = {
        {"rank", std::string(var::kProcId)},
        {"local rank", std::string(var::kLocalId)},
        {"world size", n.tasks},
        {"local world size", first_set(env, {var::kStepTasksPerNode, var::kTasksPerNode})},
        {"node rank", std::string(var::kNodeId)},
        {"nodes", n.nodes}};
    return placement;
}

}  // namespace

SlurmDefaults apply_slurm_defaults(LaunchOptions options, const env::EnvMap& env) {
    SlurmDefaults out;
    out.options = std::move(options);
    auto& o = out.options;
    const SlurmMode mode = parse_slurm_mode(o.at(Option::SlurmMode));
    if (mode == SlurmMode::Off) return out;
    if (env.find(var::kJobId) == env.end()) {
        set_mode(o, SlurmMode::Off, "SLURM_JOB_ID unset: not inside SLURM");
        return out;
    }
    if (env.find(var::kProcId) == env.end() && env.find(var::kNodeId) == env.end()) {
        set_mode(o, SlurmMode::Off, "SLURM_JOB_ID set but no SLURM_PROCID: not a SLURM task");
        out.warnings.push_back(
            "SLURM_JOB_ID is set but this is not a SLURM task (no SLURM_PROCID, as in "
            "salloc's shell on a login node): nothing inferred from SLURM; run 'srun ptrun ...' "
            "to start ptrun on the allocated nodes");
        return out;
    }
    std::optional<slurm::SlurmJob> job;
    try {
        job = slurm::slurm_job_from_env(env);
    } catch (const slurm::ParseError& e) {
        throw UsageError(std::string(e.what()) + " (or pass --slurm-mode off to ignore SLURM)");
    }
    Names names(env);
    bool per_rank = false;
    std::string why;
    if (mode == SlurmMode::Auto) {
        per_rank = job->step_id && slurm::detect_task_mode(*job) == slurm::TaskMode::PerRank;
        why = !job->step_id ? "batch script outside srun: one ptrun"
              : per_rank    ? shown(env, names.tasks) + " > " + shown(env, names.nodes)
                            : shown(env, names.tasks) + ": one task per node";
        set_mode(o, per_rank ? SlurmMode::PerRank : SlurmMode::PerNode, why);
    } else {
        per_rank = mode == SlurmMode::PerRank;
        why = as_given(o, Option::SlurmMode);
        if (per_rank && !job->step_id) {
            throw UsageError(why + ": the batch script runs once, outside any srun step (" +
                             names.step +
                             " unset); start one ptrun per rank with 'srun ptrun ...'");
        }
    }
    if (per_rank) {
        if (o.flag(Option::Standalone)) {
            throw UsageError(
                "--standalone: one-task-per-rank mode (" + why +
                ") shares one store across tasks; drop --standalone or pass --slurm-mode per-node");
        }
        fill(o, Option::RdzvId, slurm::run_id(*job), "SLURM_JOB_ID.SLURM_STEP_ID");
        out.placement = fill_per_rank(o, *job, env, names, why);
        return out;
    }
    fill_nproc(o, *job);
    if (o.flag(Option::Standalone)) return out;
    fill(o, Option::RdzvId, slurm::run_id(*job), "SLURM_JOB_ID.SLURM_STEP_ID");
    fill_per_node(o, *job, env, names);
    return out;
}

}  // namespace ptrun::launcher
