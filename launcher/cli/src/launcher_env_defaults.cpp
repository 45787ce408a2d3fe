#include "ptrun/launcher/cli/launcher_env_defaults.hpp"

#include <utility>
#include <cstdint>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/launcher_env.hpp"
#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/schedulers/reader.hpp"

namespace ptrun::launcher {
namespace {

using schedulers::LauncherKind;
using schedulers::Sourced;
using schedulers::Topology;

/// Sets option `key` from the environment unless the user gave it.
void fill(LaunchOptions& o, Option key, std::string value, std::string origin) {
    if (o.given(key)) return;
    o.at(key) = RawValue{std::move(value), Source::LauncherEnv, std::move(origin)};
}

/// Records the environment used in "launcher-env": its name replaces a given "auto".
void set_env(LaunchOptions& o, std::string_view name, std::string why) {
    auto& raw = o.at(Option::LauncherEnv);
    if (o.given(Option::LauncherEnv)) {
        raw.value = std::string(name);
        return;
    }
    raw = RawValue{std::string(name), Source::LauncherEnv, std::move(why)};
}

std::string shown(const Sourced<int>& v) { return v.origin + "=" + std::to_string(v.value); }

std::string title(const Topology& t) {
    return std::string(schedulers::launcher_kind_title(t.kind));
}

/// A job id as a run id: letters, digits, '.', '-' and '_' kept, anything else '_' (Flux's F58
/// ids begin with 'ƒ'), at most 64 bytes.
std::string run_id_of(const Topology& t) {
    std::string id(schedulers::launcher_kind_name(t.kind));
    id += '-';
    for (char ch : t.job_id.value.substr(0, 64)) {
        const auto c = static_cast<unsigned char>(ch);
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        id += keep ? static_cast<char>(c) : '_';
    }
    return id;
}

/// MASTER_PORT, else 29500 + the job id % 2000 (FNV-1a of a non-numeric id), as
/// slurm::derive_port spreads SLURM jobs.
int port_of(const Topology& t, std::string& origin) {
    if (t.port) {
        origin = t.port->origin;
        return t.port->value;
    }
    if (t.job_id.value.empty()) {
        origin = "torchrun's default port (no job id)";
        return 29500;
    }
    std::uint64_t n = 0;
    if (auto v = env::parse_int(t.job_id.value); v && *v >= 0) {
        n = static_cast<std::uint64_t>(*v);
    } else {
        n = 1469598103934665603ULL;
        for (char ch : t.job_id.value)
            n = (n ^ static_cast<std::uint64_t>(static_cast<unsigned char>(ch))) * 1099511628211ULL;
    }
    origin = "29500 + " + t.job_id.origin + " % 2000";
    return 29500 + static_cast<int>(n % 2000);
}

/// Per-node: the devices CUDA_VISIBLE_DEVICES shows, else 1 (as under SLURM without a GPU count).
void fill_nproc(LaunchOptions& o, const env::EnvMap& env) {
    if (auto cuda = env::lookup(env, "CUDA_VISIBLE_DEVICES")) {
        const auto devices = env::parse_cuda_visible_devices(*cuda).size();
        if (devices > 0) {
            fill(o, Option::NprocPerNode, std::to_string(devices),
                 "devices in CUDA_VISIBLE_DEVICES");
            return;
        }
    }
    fill(o, Option::NprocPerNode, "1", "no GPU in CUDA_VISIBLE_DEVICES");
}

/// The master host of a job with `nodes` nodes: the environment's, else this host on one node.
std::optional<Sourced<std::string>> master_host(const Topology& t, int nodes) {
    if (t.head_host) return t.head_host;
    if (nodes == 1) return Sourced<std::string>{"127.0.0.1", "one node: " + shown(t.nodes)};
    return std::nullopt;
}

[[noreturn]] void no_master(const Topology& t, std::string_view option) {
    throw UsageError(title(t) + ": " + shown(t.nodes) +
                     " nodes, but the environment names no "
                     "master host: set MASTER_ADDR to the host of rank 0 (e.g. mpirun -x "
                     "MASTER_ADDR=node1, flux run --env=MASTER_ADDR=node1), or pass " +
                     std::string(option));
}

void fill_per_node(LaunchOptions& o, const Topology& t, const env::EnvMap& env) {
    fill_nproc(o, env);
    if (o.flag(Option::Standalone)) return;
    int nodes = t.nodes.value;
    if (t.batch_script) {
        if (nodes > 1 && !o.given(Option::Nnodes)) {
            throw UsageError(shown(t.nodes) + " but ptrun runs in the " + title(t) +
                             " job script itself, on one node only: start it on every node "
                             "with 'pbsdsh -u ptrun ...', or pass --nnodes 1");
        }
        nodes = 1;
        fill(o, Option::Nnodes, "1", "the job script: this node only");
        fill(o, Option::NodeRank, "0", "the job script: this node only");
    } else if (t.world_size.value > t.nodes.value) {  // --slurm-mode per-node, several tasks
        nodes = t.world_size.value;
        fill(o, Option::Nnodes, std::to_string(nodes),
             t.world_size.origin + " (one agent per task)");
        fill(o, Option::NodeRank, std::to_string(t.rank.value),
             t.rank.origin + " (one agent per task)");
    } else {
        fill(o, Option::Nnodes, std::to_string(nodes), t.nodes.origin);
        const auto& node = t.node_rank
                               ? *t.node_rank
                               : Sourced<int>{t.rank.value, t.rank.origin + " (one task per node)"};
        fill(o, Option::NodeRank, std::to_string(node.value), node.origin);
    }
    if (!t.job_id.value.empty()) fill(o, Option::RdzvId, run_id_of(t), t.job_id.origin);
    if (nodes == 1) return;
    if (o.given(Option::RdzvEndpoint) || o.given(Option::RdzvBackend)) return;  // the user's
    // Static rendezvous at the master host: every node knows its rank, node 0 hosts the store
    // (so several agents on one host, e.g. mpirun -np 2 on one machine, agree on who hosts it).
    std::string port_origin;
    const int port = port_of(t, port_origin);
    auto host = master_host(t, t.nodes.value);  // agents on one host meet on it
    if (!host && !o.given(Option::MasterAddr)) no_master(t, "--master-addr");
    if (host) fill(o, Option::MasterAddr, host->value, host->origin);
    fill(o, Option::MasterPort, std::to_string(port), port_origin);
}

/// GROUP_RANK of a task in per-rank mode: the environment's node rank, else its block when every
/// node runs local_world_size consecutive ranks (mpirun's default mapping by slot).
Sourced<int> group_rank_of(const Topology& t) {
    if (t.node_rank) return *t.node_rank;
    if (t.nodes.value == 1) return {0, "one node: " + shown(t.nodes)};
    const int local = t.local_world_size.value;
    const int first = t.rank.value - t.local_rank.value;
    if (first >= 0 && first % local == 0 && t.nodes.value * local == t.world_size.value) {
        return {first / local, "(" + t.rank.origin + " - " + t.local_rank.origin + ") / " +
                                   t.local_world_size.origin};
    }
    throw UsageError(title(t) + ": " + shown(t.rank) + " with " + shown(t.local_rank) + " and " +
                     shown(t.local_world_size) + " on " + shown(t.nodes) +
                     " nodes: the ranks are not in equal blocks per node, so this task's node "
                     "rank cannot be told; map the ranks by slot (mpirun --map-by slot) with the "
                     "same number on every node, or start one task per node");
}

FixedPlacement fill_per_rank(LaunchOptions& o, const Topology& t, const std::string& why) {
    auto refuse = [&](Option key, const std::string& hint) {
        throw UsageError(as_given(key, o.at(key)) + ": one-task-per-rank mode (" + why +
                         ") runs one worker per " + title(t) + " task; " + hint);
    };
    if (o.given(Option::NprocPerNode) && o.at(Option::NprocPerNode).value != "1") {
        refuse(Option::NprocPerNode, "drop it, or start one task per node");
    }
    for (auto key : {Option::Nnodes, Option::NodeRank}) {
        if (o.given(key)) {
            refuse(key,
                   "ranks come from " + t.rank.origin + "; drop it or pass --slurm-mode per-node");
        }
    }
    if (o.given(Option::MaxRestarts) && o.at(Option::MaxRestarts).value != "0") {
        refuse(Option::MaxRestarts,
               "one rank cannot restart alone; start one task per node for restarts");
    }
    if (o.flag(Option::Standalone)) {
        throw UsageError("--standalone: one-task-per-rank mode (" + why +
                         ") shares one store across tasks; drop --standalone or pass "
                         "--slurm-mode per-node");
    }
    fill(o, Option::NprocPerNode, "1", "one task per rank");
    if (!t.job_id.value.empty()) fill(o, Option::RdzvId, run_id_of(t), t.job_id.origin);
    std::string port_origin;
    int port = port_of(t, port_origin);
    auto host = master_host(t, t.nodes.value);
    if (o.given(Option::RdzvEndpoint)) {
        const auto& raw = o.at(Option::RdzvEndpoint).value;
        auto given_endpoint = split_endpoint(raw, option_name(Option::RdzvEndpoint));
        if (given_endpoint.port == 0) {
            throw UsageError("--rdzv-endpoint '" + raw +
                             "': expected HOST[:PORT] with PORT from 1 to 65535 (the workers "
                             "connect to it: one-task-per-rank mode starts no agent's store)");
        }
        host = Sourced<std::string>{given_endpoint.host, "--rdzv-endpoint"};
        port_origin = "--rdzv-endpoint";
        if (given_endpoint.port) port = *given_endpoint.port;
    }
    if (!host && !o.given(Option::MasterAddr)) no_master(t, "--master-addr (rank 0's host)");
    if (host) fill(o, Option::MasterAddr, host->value, host->origin);
    fill(o, Option::MasterPort, std::to_string(port), port_origin);

    const auto group = group_rank_of(t);
    FixedPlacement p;
    p.rank = t.rank.value;
    p.local_rank = t.local_rank.value;
    p.world_size = t.world_size.value;
    p.local_world_size = t.local_world_size.value;
    p.group_rank = group.value;
    p.group_world_size = t.nodes.value;
    p.hosts_store = t.rank.value == 0;  // rank 0 runs on the master host
    p.origins = {{"rank", t.rank.origin},
                 {"local rank", t.local_rank.origin},
                 {"world size", t.world_size.origin},
                 {"local world size", t.local_world_size.origin},
                 {"node rank", group.origin},
                 {"nodes", t.nodes.origin}};
    return p;
}

/// SLURM, or nothing (apply_slurm_defaults says why: not inside SLURM, salloc's shell).
LaunchDefaults apply_slurm(LaunchOptions options, const env::EnvMap& env, bool forced) {
    if (forced && env.find("SLURM_JOB_ID") == env.end()) {
        throw UsageError(as_given(Option::LauncherEnv, options.at(Option::LauncherEnv)) +
                         ": SLURM_JOB_ID unset: not inside a SLURM job");
    }
    auto slurm = apply_slurm_defaults(std::move(options), env);
    LaunchDefaults out{std::move(slurm.options), std::move(slurm.placement),
                       std::move(slurm.warnings)};
    const bool used = out.options.at(Option::SlurmMode).value != "off";
    set_env(out.options, used ? "slurm" : "off",
            used ? "SLURM_JOB_ID" : "no launch environment found; man ptrun: LAUNCH ENVIRONMENTS");
    return out;
}

}  // namespace

LaunchDefaults apply_launcher_env(LaunchOptions options, const env::EnvMap& env,
                                  const ReadHostFile& read_host_file) {
    using Mode = LauncherEnvChoice::Mode;
    const auto choice = parse_launcher_env(options.at(Option::LauncherEnv));
    const auto slurm_mode = parse_slurm_mode(options.at(Option::SlurmMode));
    if (choice.mode == Mode::Off) {
        if (!options.given(Option::SlurmMode)) {
            options.at(Option::SlurmMode) =
                RawValue{"off", Source::LauncherEnv,
                         as_given(Option::LauncherEnv, options.at(Option::LauncherEnv))};
        }
        return LaunchDefaults{std::move(options), std::nullopt, {}};
    }
    const schedulers::Reader* reader = choice.mode == Mode::Forced
                                           ? &schedulers::reader_for(choice.kind)
                                           : schedulers::detect_reader(env);
    if (!reader || reader->kind == LauncherKind::Slurm)
        return apply_slurm(std::move(options), env, choice.mode == Mode::Forced);

    LaunchDefaults out{std::move(options), std::nullopt, {}};
    auto& o = out.options;
    const std::string env_title(schedulers::launcher_kind_title(reader->kind));
    const std::string hint = " (or pass --launcher-env off to ignore " + env_title + ")";
    std::optional<std::string> host_file;
    if (auto var = reader->host_file_var(env)) {
        host_file = read_host_file(*var, env.find(*var)->second);
    }
    Topology t;
    try {
        t = reader->read(env, host_file);
    } catch (const env::ParseError& e) {
        throw UsageError(std::string(e.what()) + hint);
    }
    const std::string found =
        reader->found_by(env).value_or(as_given(Option::LauncherEnv, o.at(Option::LauncherEnv)));
    bool per_rank = t.world_size.value > t.nodes.value;
    std::string why = shown(t.world_size) + (per_rank ? " > " : " = ") + shown(t.nodes);
    const auto& nproc = o.at(Option::NprocPerNode);
    if (per_rank && o.given(Option::NprocPerNode) && nproc.value != "1" &&
        slurm_mode == SlurmMode::Auto) {
        per_rank = false;  // an explicit worker count: every task is an agent
        why = as_given(Option::NprocPerNode, nproc) + ": one agent per task";
    }
    if (slurm_mode == SlurmMode::PerNode || slurm_mode == SlurmMode::PerRank) {
        per_rank = slurm_mode == SlurmMode::PerRank;
        why = as_given(Option::SlurmMode, o.at(Option::SlurmMode));
        if (per_rank && t.batch_script) {
            throw UsageError(why + ": the " + env_title +
                             " job script runs once; start one ptrun per rank with its launcher");
        }
    } else if (!o.given(Option::SlurmMode)) {
        // SLURM is not read; the mode's reason goes where --explain's mode row looks for it.
        o.at(Option::SlurmMode) = RawValue{"off", Source::LauncherEnv, why};
    }
    set_env(o, schedulers::launcher_kind_name(reader->kind), found);
    if (per_rank) {
        out.placement = fill_per_rank(o, t, why);
    } else {
        fill_per_node(o, t, env);
    }
    return out;
}

}  // namespace ptrun::launcher
