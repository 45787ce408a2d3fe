#include "environment_defaults.hpp"

#include <utility>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include "env_dialect.hpp"
#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/rdzv_backend.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher::detail {
namespace {

using schedulers::Sourced;
using schedulers::Topology;

/// One fill: the options, the environment's topology and dialect.
struct Fill {
    LaunchOptions& o;
    const Topology& t;
    const env::EnvMap& env;
    const EnvDialect& d;

    /// Sets option `key` from the environment unless the user gave it.
    void set(Option key, std::string value, std::string origin) const {
        if (o.given(key)) return;
        o.at(key) = RawValue{std::move(value), d.source, std::move(origin)};
    }

    /// "NAME=4", or as set, "NAME='4'", in the dialects that quote; a value derived from several
    /// variables is "4 (A / B)".
    std::string shown(const Sourced<int>& v) const {
        const bool variable =
            !v.origin.empty() && std::all_of(v.origin.begin(), v.origin.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
            });
        if (!variable) return std::to_string(v.value) + " (" + v.origin + ")";
        if (d.quote_values) return v.origin + "='" + env::lookup(env, v.origin).value_or("") + "'";
        return v.origin + "=" + std::to_string(v.value);
    }

    std::string title() const { return std::string(schedulers::launcher_kind_title(t.kind)); }
};

/// The run id: the environment's, else "<env>-<job id>" with letters, digits, '.', '-' and '_'
/// kept, anything else '_' (Flux's F58 ids begin with 'ƒ'), at most 64 bytes of the id.
void fill_run_id(const Fill& f) {
    const auto& t = f.t;
    if (t.run_id) {
        f.set(Option::RdzvId, t.run_id->value, t.run_id->origin);
        return;
    }
    if (t.job_id.value.empty()) return;
    std::string id(schedulers::launcher_kind_name(t.kind));
    id += '-';
    for (char ch : t.job_id.value.substr(0, 64)) {
        const auto c = static_cast<unsigned char>(ch);
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        id += keep ? static_cast<char>(c) : '_';
    }
    f.set(Option::RdzvId, id, t.job_id.origin);
}

/// The environment's port (MASTER_PORT), else the dialect's variable (PTRUN_SLURM_PORT), else
/// 29500 + the job id % 2000 (FNV-1a of a non-numeric id), as slurm::derive_port spreads jobs.
int port_of(const Fill& f, std::string& origin) {
    const auto& t = f.t;
    if (t.port) {
        origin = t.port->origin;
        return t.port->value;
    }
    if (!f.d.port_var.empty()) {
        if (auto text = env::lookup(f.env, f.d.port_var)) {
            auto v = env::parse_int(*text);
            if (!v || *v < 1 || *v > 65535) {
                throw UsageError(f.d.port_var + "='" + *text +
                                 "': expected a port from 1 to 65535");
            }
            origin = f.d.port_var;
            return static_cast<int>(*v);
        }
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

/// Per node: the GPUs the environment gave the node, else the devices CUDA_VISIBLE_DEVICES
/// shows, else 1.
void fill_nproc(const Fill& f) {
    const auto& gpus = f.t.gpus;
    if (gpus && gpus->value > 0) {
        f.set(Option::NprocPerNode, std::to_string(gpus->value), gpus->origin);
        return;
    }
    if (auto cuda = env::lookup(f.env, "CUDA_VISIBLE_DEVICES")) {
        const auto devices = env::parse_cuda_visible_devices(*cuda).size();
        if (devices > 0) {
            f.set(Option::NprocPerNode, std::to_string(devices), "devices in CUDA_VISIBLE_DEVICES");
            return;
        }
    }
    f.set(Option::NprocPerNode, "1",
          "no GPU in " + (gpus ? gpus->origin + " or " : std::string()) + "CUDA_VISIBLE_DEVICES");
}

/// The master host of a job with `nodes` nodes: the environment's, else this host on one node.
std::optional<Sourced<std::string>> master_host(const Fill& f, int nodes) {
    if (f.t.head_host) return f.t.head_host;
    if (nodes == 1) return Sourced<std::string>{"127.0.0.1", "one node: " + f.shown(f.t.nodes)};
    return std::nullopt;
}

[[noreturn]] void no_master(const Fill& f, std::string_view option) {
    throw UsageError(f.title() + ": " + f.shown(f.t.nodes) +
                     " nodes, but the environment names no "
                     "master host: set MASTER_ADDR to the host of rank 0 (e.g. mpirun -x "
                     "MASTER_ADDR=node1, flux run --env=MASTER_ADDR=node1), or pass " +
                     std::string(option));
}

/// True when the user asked for --rdzv-backend etcd-v2 (or etcd); a bad name is resolve's to
/// refuse.
bool user_backend_is_etcd(const LaunchOptions& o) {
    if (!o.given(Option::RdzvBackend)) return false;
    const auto& name = o.at(Option::RdzvBackend).value;
    return name == backend_name(RdzvBackend::Etcd) || name == "etcd";
}

/// One agent per node: the node's place, then how the agents meet.
void fill_per_node(const Fill& f) {
    auto& o = f.o;
    const auto& t = f.t;
    fill_nproc(f);
    if (o.flag(Option::Standalone)) return;
    fill_run_id(f);
    std::string port_origin;
    int port = 0;
    if (f.d.c10d_agents) port = port_of(f, port_origin);  // a bad port variable is refused first
    int nodes = t.nodes.value;
    if (t.batch_script) {
        if (nodes > 1 && !o.given(Option::Nnodes)) {
            throw UsageError(f.shown(t.nodes) + " but ptrun runs in the " + f.d.batch_script +
                             ", on one node only: start it on every node with '" +
                             f.d.start_per_node + "', or pass --nnodes 1");
        }
        nodes = 1;
        f.set(Option::Nnodes, "1", f.d.batch_here);
        f.set(Option::NodeRank, "0", f.d.batch_here);
    } else if (t.world_size.value > t.nodes.value) {  // --slurm-mode per-node, several tasks
        nodes = t.world_size.value;
        f.set(Option::Nnodes, std::to_string(nodes), t.world_size.origin + " (one agent per task)");
        f.set(Option::NodeRank, std::to_string(t.rank.value),
              t.rank.origin + " (one agent per task)");
    } else {
        f.set(Option::Nnodes, std::to_string(nodes), t.nodes.origin);
        const auto& node = t.node_rank
                               ? *t.node_rank
                               : Sourced<int>{t.rank.value, t.rank.origin + " (one task per node)"};
        f.set(Option::NodeRank, std::to_string(node.value), node.origin);
    }
    // etcd-v2: the agents meet in the etcd cluster the user names, never at the head host.
    if (user_backend_is_etcd(o)) return;
    if (f.d.c10d_agents) {  // c10d at the head host, one node or several
        auto host = master_host(f, t.nodes.value);
        if (!host) no_master(f, "--rdzv-endpoint");
        f.set(Option::RdzvBackend, std::string(backend_name(RdzvBackend::C10d)),
              "inside " + f.title());
        f.set(Option::RdzvEndpoint, host->value + ":" + std::to_string(port),
              host->origin + " : " + port_origin);
        return;
    }
    if (nodes == 1) return;
    if (o.given(Option::RdzvEndpoint) || o.given(Option::RdzvBackend)) return;  // the user's
    // Static rendezvous at the master host: every node knows its rank, node 0 hosts the store
    // (so several agents on one host, e.g. mpirun -np 2 on one machine, agree on who hosts it).
    port = port_of(f, port_origin);
    auto host = master_host(f, t.nodes.value);  // agents on one host meet on it
    if (!host && !o.given(Option::MasterAddr)) no_master(f, "--master-addr");
    if (host) f.set(Option::MasterAddr, host->value, host->origin);
    f.set(Option::MasterPort, std::to_string(port), port_origin);
}

/// GROUP_RANK of a task in per-rank mode: the environment's node rank, else its block when every
/// node runs local_world_size consecutive ranks (mpirun's default mapping by slot).
Sourced<int> group_rank_of(const Fill& f) {
    const auto& t = f.t;
    if (t.node_rank) return *t.node_rank;
    if (t.nodes.value == 1) return {0, "one node: " + f.shown(t.nodes)};
    const int local = t.local_world_size.value;
    const int first = t.rank.value - t.local_rank.value;
    if (first >= 0 && first % local == 0 && t.nodes.value * local == t.world_size.value) {
        return {first / local, "(" + t.rank.origin + " - " + t.local_rank.origin + ") / " +
                                   t.local_world_size.origin};
    }
    throw UsageError(f.title() + ": " + f.shown(t.rank) + " with " + f.shown(t.local_rank) +
                     " and " + f.shown(t.local_world_size) + " on " + f.shown(t.nodes) +
                     " nodes: the ranks are not in equal blocks per node, so this task's node "
                     "rank cannot be told; map the ranks by slot (mpirun --map-by slot) with the "
                     "same number on every node, or start one task per node");
}

/// One worker per task, placed as the launcher placed the task.
FixedPlacement fill_per_rank(const Fill& f, const std::string& why) {
    auto& o = f.o;
    const auto& t = f.t;
    if (o.flag(Option::Standalone)) {
        throw UsageError("--standalone: one-task-per-rank mode (" + why +
                         ") shares one store across tasks; drop --standalone or pass "
                         "--slurm-mode per-node");
    }
    auto refuse = [&](Option key, const std::string& hint) {
        throw UsageError(as_given(key, o.at(key)) + ": one-task-per-rank mode (" + why +
                         ") runs one worker per " + f.title() + " task; " + hint);
    };
    if (o.given(Option::NprocPerNode) && o.at(Option::NprocPerNode).value != "1") {
        refuse(Option::NprocPerNode, "drop it, or start one task per node" + f.d.per_node_hint);
    }
    for (auto key : {Option::Nnodes, Option::NodeRank}) {
        if (o.given(key)) {
            refuse(key,
                   "ranks come from " + t.rank.origin + "; drop it or pass --slurm-mode per-node");
        }
    }
    if (o.given(Option::MaxRestarts) && o.at(Option::MaxRestarts).value != "0") {
        refuse(Option::MaxRestarts, f.d.restart_hint);
    }
    if (user_backend_is_etcd(o)) {  // its members would be taken for rank 0's store address
        const std::string hint =
            "the tasks need no rendezvous; drop it, or start one task per node";
        refuse(Option::RdzvBackend, hint + f.d.per_node_hint);
    }
    f.set(Option::NprocPerNode, "1", "one task per rank");
    fill_run_id(f);
    std::string port_origin;
    int port = port_of(f, port_origin);
    auto host = master_host(f, t.nodes.value);
    if (o.given(Option::RdzvEndpoint)) {
        const auto& raw = o.at(Option::RdzvEndpoint).value;
        auto given_endpoint = split_endpoint(raw, option_name(Option::RdzvEndpoint));
        if (given_endpoint.port == 0) {  // the workers' MASTER_PORT: no server picks one here
            throw UsageError("--rdzv-endpoint '" + raw +
                             "': expected HOST[:PORT] with PORT from 1 to 65535 (the workers "
                             "connect to it: one-task-per-rank mode starts no agent's store)");
        }
        host = Sourced<std::string>{given_endpoint.host, "--rdzv-endpoint"};
        port_origin = "--rdzv-endpoint";
        if (given_endpoint.port) port = *given_endpoint.port;
    }
    if (!host && !o.given(Option::MasterAddr)) no_master(f, "--master-addr (rank 0's host)");
    if (host) f.set(Option::MasterAddr, host->value, host->origin);
    f.set(Option::MasterPort, std::to_string(port), port_origin);

    const auto group = group_rank_of(f);
    FixedPlacement p;
    p.rank = t.rank.value;
    p.local_rank = t.local_rank.value;
    p.world_size = t.world_size.value;
    p.local_world_size = t.local_world_size.value;
    p.group_rank = group.value;
    p.group_world_size = t.nodes.value;
    // The first task of the first node, on the master host whatever the task distribution
    // (usually rank 0), hosts the workers' store.
    p.hosts_store = group.value == 0 && t.local_rank.value == 0;
    p.origins = {{"rank", t.rank.origin},
                 {"local rank", t.local_rank.origin},
                 {"world size", t.world_size.origin},
                 {"local world size", t.local_world_size.origin},
                 {"node rank", group.origin},
                 {"nodes", t.nodes.origin}};
    return p;
}

/// Why auto mode found one task per rank (`per_rank`) or one agent per node, for --explain.
std::string mode_reason(const Fill& f, bool per_rank) {
    const auto& t = f.t;
    if (t.batch_script && !f.d.batch_why.empty()) return f.d.batch_why;
    if (per_rank) return f.shown(t.world_size) + " > " + f.shown(t.nodes);
    // Tasks counted as the nodes (PBS, Kubernetes): the task's node index shows it is its node's
    // one ptrun ("PBS_NODENUM: one ptrun per node").
    if (t.world_size.origin == t.nodes.origin)
        return t.rank.origin + ": " + t.local_world_size.origin;
    if (f.d.counts_tasks_only) return f.shown(t.world_size) + ": one task per node";
    return f.shown(t.world_size) + " = " + f.shown(t.nodes);
}

/// One task per rank or one agent per node: --slurm-mode's choice, else detected. Records it
/// in "slurm-mode" and says why in `why`.
bool choose_per_rank(const Fill& f, std::string& why) {
    auto& o = f.o;
    const auto mode = parse_slurm_mode(o.at(Option::SlurmMode));
    bool per_rank = false;
    if (mode == SlurmMode::PerNode || mode == SlurmMode::PerRank) {
        per_rank = mode == SlurmMode::PerRank;
        why = as_given(Option::SlurmMode, o.at(Option::SlurmMode));
        if (per_rank && f.t.batch_script) throw UsageError(why + ": " + f.d.batch_runs_once);
    } else {
        per_rank = !f.t.batch_script && f.t.world_size.value > f.t.nodes.value;
        why = mode_reason(f, per_rank);
        const auto& nproc = o.at(Option::NprocPerNode);
        if (per_rank && f.d.nproc_makes_agents && o.given(Option::NprocPerNode) &&
            nproc.value != "1") {
            per_rank = false;  // an explicit worker count: every task is an agent
            why = as_given(Option::NprocPerNode, nproc) + ": one agent per task";
        }
    }
    if (f.d.own_mode) {
        record_slurm_mode(o, per_rank ? SlurmMode::PerRank : SlurmMode::PerNode, why);
    } else if (!o.given(Option::SlurmMode)) {
        // SLURM is not read; the mode's reason goes where --explain's mode row looks for it.
        o.at(Option::SlurmMode) = RawValue{"off", Source::LauncherEnv, why};
    }
    return per_rank;
}

}  // namespace

LaunchDefaults fill_from_environment(LaunchOptions options, const env::EnvMap& env,
                                     const schedulers::Reader& reader,
                                     const ReadHostFile& read_host_file) {
    const EnvDialect dialect = dialect_for(reader.kind, env);
    std::optional<std::string> host_file;
    if (auto var = reader.host_file_var(env)) {
        host_file = read_host_file(*var, env.find(*var)->second);
    }
    Topology t;
    try {
        t = reader.read(env, host_file);
    } catch (const env::ParseError& e) {
        throw UsageError(std::string(e.what()) + dialect.off_hint);
    }
    LaunchDefaults out{std::move(options), std::nullopt, {}};
    const Fill f{out.options, t, env, dialect};
    std::string why;
    if (choose_per_rank(f, why)) {
        out.placement = fill_per_rank(f, why);
    } else {
        fill_per_node(f);
    }
    return out;
}

}  // namespace ptrun::launcher::detail
