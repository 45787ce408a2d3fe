#include "ptrun/launcher/plan/explain.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/output/usage_table.hpp"
#include "ptrun/launcher/process/containment.hpp"
#include "ptrun/launcher/process/memory_cgroup.hpp"
#include "ptrun/launcher/process/worker_memory_cgroups.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"

namespace ptrun::launcher {
namespace {

std::string source_of(const LaunchOptions& o, Option key) {
    switch (o.at(key).source) {
        case Source::Flag:
            return "flag " + flag_text(key);
        case Source::PetEnv:  // PET_..., or torchrun's own variable after it
            return "env " + (o.at(key).origin.empty() ? std::string(option_spec(key).pet)
                                                      : o.at(key).origin);
        case Source::Slurm:
        case Source::LauncherEnv:
            return o.at(key).origin;
        case Source::Default:
            break;
    }
    return "default";
}

/// The table's rows (what, value, where from), laid out once all are known.
using Table = std::vector<std::array<std::string, 3>>;

void row(Table& out, const std::string& what, const std::string& value, const std::string& from) {
    out.push_back({what, printable(value), printable(from)});
}

/// Values longer than this (a list of 4,096 GPUs) do not widen the value column: padding every row
/// to them would make the output grow with rows times their length.
constexpr std::size_t kMaxValueColumn = 80;

/// Columns as wide as their longest entry plus two spaces, so no value runs into its source.
std::string layout(const Table& table) {
    std::size_t what_width = 0, value_width = 0;
    for (const auto& [what, value, from] : table) {
        what_width = std::max(what_width, what.size());
        if (value.size() <= kMaxValueColumn) value_width = std::max(value_width, value.size());
    }
    std::string out;
    for (const auto& [what, value, from] : table) {
        out += what + std::string(what_width + 2 - what.size(), ' ');
        out += value + std::string(std::max(value_width, value.size()) + 2 - value.size(), ' ');
        out += "(" + from + ")\n";
    }
    return out;
}

/// The launch environment other than SLURM in use ("MPI", "Flux", ...), or "" for SLURM or none.
std::string other_env(const LaunchOptions& o) {
    auto kind = schedulers::parse_launcher_kind(o.at(Option::LauncherEnv).value);
    if (!kind || *kind == schedulers::LauncherKind::Slurm) return {};
    return std::string(schedulers::launcher_kind_title(*kind));
}

std::string mode_name(SlurmMode mode, const LaunchOptions& o, bool per_rank) {
    if (auto other = other_env(o); !other.empty()) {
        return (per_rank ? "one task per rank (" : "one agent per node (") + other + ")";
    }
    if (mode == SlurmMode::PerRank) return "one task per rank (SLURM)";
    if (mode == SlurmMode::PerNode) return "one agent per node (SLURM)";
    return "one agent per node";
}

/// "launch env": the environment read and the variable that showed it, or "none".
void explain_environment(Table& out, const LaunchOptions& o) {
    const auto& raw = o.at(Option::LauncherEnv);
    auto kind = schedulers::parse_launcher_kind(raw.value);
    const std::string value = kind ? std::string(schedulers::launcher_kind_title(*kind)) : "none";
    std::string from = raw.source == Source::Flag     ? "flag --launcher-env"
                       : raw.source == Source::PetEnv ? "env PET_LAUNCHER_ENV"
                       : raw.origin.empty()           ? "default"
                                                      : raw.origin;
    out.push_back({"launch env", printable(value), printable(from)});
}

std::string origin(const FixedPlacement& p, std::string_view field) {
    auto it = p.origins.find(field);
    return it == p.origins.end() ? "SLURM" : it->second;
}

void explain_placement(Table& out, const FixedPlacement& p) {
    row(out, "nodes", std::to_string(p.group_world_size), origin(p, "nodes"));
    row(out, "node rank", std::to_string(p.group_rank), origin(p, "node rank"));
    row(out, "workers here", "1", "one task per rank");
    row(out, "rank", std::to_string(p.rank), origin(p, "rank"));
    row(out, "local rank", std::to_string(p.local_rank), origin(p, "local rank"));
    row(out, "world size", std::to_string(p.world_size), origin(p, "world size"));
    row(out, "local world size", std::to_string(p.local_world_size), origin(p, "local world size"));
}

/// "etcd": every member, the protocol and the TLS files ("a:2379, b:2379 (https, cacert ca.pem)").
void explain_etcd(Table& out, const LaunchConfig& c, const LaunchOptions& o) {
    std::string members;
    for (const auto& m : c.etcd.endpoints)
        members += (members.empty() ? "" : ", ") + format_endpoint(m.host, m.port);
    std::string how = c.etcd.https ? "https" : "http";
    for (auto [name, file] : {std::pair{"cacert", &c.etcd.cacert}, std::pair{"cert", &c.etcd.cert},
                              std::pair{"key", &c.etcd.key}}) {
        if (!file->empty()) how += std::string(", ") + name + " " + *file;
    }
    std::string from = source_of(o, Option::RdzvEndpoint);
    const bool conf = std::any_of(c.rdzv_conf.begin(), c.rdzv_conf.end(),
                                  [](const auto& kv) { return is_etcd_conf_key(kv.first); });
    if (conf) from += ", " + source_of(o, Option::RdzvConf);
    row(out, "etcd", members + " (" + how + ")", from);
}

}  // namespace

std::string explain(const LaunchConfig& c, const FixedPlacement* fixed, const LaunchOptions& o,
                    const std::optional<Interpreter>& interpreter,
                    const std::vector<ExplainRow>& extra) {
    Table out;
    row(out, "mode", mode_name(c.slurm_mode, o, fixed != nullptr), source_of(o, Option::SlurmMode));
    explain_environment(out, o);
    if (fixed) {
        explain_placement(out, *fixed);
    } else {
        row(out, "nodes", std::to_string(c.nnodes.min) + ":" + std::to_string(c.nnodes.max),
            source_of(o, Option::Nnodes));
        const bool assigned = c.multi_node() && !c.node_rank_given;
        const bool etcd = c.rdzv_backend == RdzvBackend::Etcd || !c.rdzv_file.empty();
        row(out, "node rank", assigned ? "assigned at rendezvous" : std::to_string(c.node_rank),
            !assigned ? source_of(o, Option::NodeRank)
            : etcd    ? "by the coordinator elected among the agents"
                      : "store host first, then by hostname");
        row(out, "workers per node", std::to_string(c.nproc_per_node),
            source_of(o, Option::NprocPerNode));
        std::string world = std::to_string(c.nproc_per_node * c.nnodes.min);
        if (c.nnodes.max > c.nnodes.min)
            world += " to " + std::to_string(c.nproc_per_node * c.nnodes.max);
        row(out, "world size", world, "nodes x workers per node");
        if (c.multi_node() && c.rdzv_backend != RdzvBackend::Static) {
            // Which node ends up a spare is known only at the rendezvous: the rule is.
            row(out, "spares",
                "a node joining beyond " + std::to_string(c.nnodes.max) +
                    " waits as a spare, then takes a lost node's place",
                "--nnodes MAX");
        }
    }
    const bool implied_c10d =
        !c.standalone && c.rdzv_backend == RdzvBackend::C10d && !o.given(Option::RdzvBackend);
    row(out, "rdzv backend", fixed ? "none" : std::string(backend_name(c.rdzv_backend)),
        fixed          ? "fixed placement"
        : c.standalone ? "--standalone"
        : implied_c10d ? "an endpoint without a backend"
                       : source_of(o, Option::RdzvBackend));
    row(out, "rdzv endpoint",
        fixed                     ? "(none)"
        : c.rdzv_endpoint.empty() ? "(local)"
                                  : c.rdzv_endpoint,
        source_of(o, Option::RdzvEndpoint));
    if (!fixed && c.rdzv_backend == RdzvBackend::Etcd) explain_etcd(out, c, o);
    row(out, "run id", c.run_id,
        c.standalone && !o.given(Option::RdzvId) ? "random, --standalone"
                                                 : source_of(o, Option::RdzvId));
    std::string store =
        c.master_addr + ":" + (c.master_port ? std::to_string(*c.master_port) : "<free port>");
    if (fixed) store += fixed->hosts_store ? " (hosted here)" : " (hosted by node 0's first task)";
    if (!fixed && c.rdzv_backend == RdzvBackend::Etcd) {
        store = "none: the coordinator is elected among the agents (no node hosts the store)";
    } else if (!fixed && !c.rdzv_file.empty()) {
        store = "the file " + c.rdzv_file + " (no rendezvous port; the agent holding " +
                c.rdzv_file +
                ".lead coordinates; each round's group rank 0 hosts its workers' store)";
    } else if (!fixed && c.multi_node()) {
        store = format_endpoint(c.rendezvous_store.host, c.rendezvous_store.port) +
                (c.rdzv.is_host == true    ? " (hosted here)"
                 : c.rdzv.is_host == false ? " (hosted elsewhere)"
                                           : " (hosted by the node with that address)");
    }
    std::string store_from =
        fixed ? source_of(o, Option::MasterAddr) + ", " + source_of(o, Option::MasterPort)
              : source_of(o, Option::MasterPort);
    if (!fixed && c.rdzv_backend == RdzvBackend::Etcd) {
        store_from = source_of(o, Option::RdzvBackend);
    } else if (!fixed && !c.rdzv_file.empty()) {
        store_from = source_of(o, Option::RdzvConf) + " store_type=file, " +
                     source_of(o, Option::RdzvEndpoint);
    } else if (!fixed && c.multi_node()) {
        store_from =
            c.rdzv_backend == RdzvBackend::Static
                ? source_of(o, Option::MasterAddr) + ", " + source_of(o, Option::MasterPort)
                : source_of(o, Option::RdzvEndpoint);
    }
    row(out, "store", store, store_from);
    row(out, "max restarts", std::to_string(c.max_restarts), source_of(o, Option::MaxRestarts));
    if (c.log_line_prefix) {
        row(out, "line prefix",
            "'" + c.log_line_prefix->text() + "' (tee'd console lines, filtered_*.log)",
            source_of(o, Option::LogLinePrefixTemplate));
    }
    row(out, "program", c.program.empty() ? "(none)" : c.program, "command line");
    if (interpreter) {
        row(out, "interpreter", interpreter->path.empty() ? "(not found)" : interpreter->path,
            interpreter->origin);
    }
    for (const auto& r : extra) row(out, r.what, r.value, r.from);
    return layout(out);
}

namespace {

/// --preload: what the node's zygote imports and runs, or why it is not used.
ExplainRow explain_preload(const LaunchConfig& c, const LaunchOptions& o, const WorkerCommand& cmd,
                           bool per_rank) {
    std::string modules;
    for (const auto& m : c.preload) modules += (modules.empty() ? "" : ",") + m;
    if (c.slurm_mode == SlurmMode::PerRank || (!other_env(o).empty() && per_rank)) {
        const std::string env = other_env(o).empty() ? "SLURM" : other_env(o);
        return {"preload",
                modules + ": not used (" + env +
                    " one-task-per-rank mode: each ptrun starts "
                    "its one worker once, no import to share)",
                source_of(o, Option::Preload)};
    }
    std::string argv;
    for (const auto& word : cmd.zygote_argv(c.preload))
        argv += (argv.empty() ? "" : " ") + shell_quoted(word);
    return {"preload",
            printable(modules) + ": a zygote per node imports them once (" + printable(argv) +
                "); every worker is forked from it (how one differs from an exec'd worker: "
                "man ptrun, WARM START)",
            source_of(o, Option::Preload)};
}

}  // namespace

std::vector<ExplainRow> explain_worker_command(const LaunchConfig& c, const LaunchOptions& o,
                                               const env::EnvMap& env,
                                               const Installation& installation, bool per_rank) {
    std::vector<ExplainRow> rows;
    if (find_interpreter(c, env, installation)) {
        if (c.no_runner) {
            rows.push_back({"python runner", "off", source_of(o, Option::NoRunner)});
        } else if (installation.runner.empty()) {
            rows.push_back({"python runner", "(not found)",
                            "expected at ../lib/ptrun/python/ptrun/_runner.py beside ptrun"});
        } else {
            rows.push_back({"python runner", installation.runner, "installed beside ptrun"});
        }
    }
    try {
        const auto cmd = make_worker_command(c, env, installation);
        auto text = [](const std::vector<std::string>& words) {
            std::string argv;
            for (const auto& word : words) argv += (argv.empty() ? "" : " ") + shell_quoted(word);
            return printable(argv);
        };
        if (cmd.argv_for(0) == cmd.argv && cmd.argv_for(1) == cmd.argv) {
            rows.push_back({"worker argv", text(cmd.argv), "what each worker execs"});
        } else {
            rows.push_back({"worker argv", text(cmd.argv),
                            "${local_rank} is each worker's local rank (as torchrun)"});
            constexpr int kShown = 4;
            for (int lr = 0; lr < std::min(c.nproc_per_node, kShown); ++lr) {
                rows.push_back({"  local rank " + std::to_string(lr), text(cmd.argv_for(lr)),
                                "what it execs"});
            }
            if (c.nproc_per_node > kShown) {
                rows.push_back({"  ...",
                                "and so on to local rank " + std::to_string(c.nproc_per_node - 1),
                                ""});
            }
        }
        if (!c.preload.empty()) rows.push_back(explain_preload(c, o, cmd, per_rank));
    } catch (const UsageError& e) {
        rows.push_back(
            {"worker argv", "cannot start: " + printable(e.what()), "what each worker execs"});
    }
    return rows;
}

ExplainRow explain_containment_row(const env::EnvMap& env) {
    return {"containment", explain_containment(env), "this machine; CONTAINMENT in man ptrun"};
}

ExplainRow explain_memory_limit_row(const LaunchConfig& c, const LaunchOptions& o) {
    if (!c.memory_limit_per_worker) {
        return {"memory limit", limit_text(job_memory_limit()),
                "this machine; --memory-limit-per-worker gives each worker its own"};
    }
    const std::string per_worker = bytes_text(*c.memory_limit_per_worker) + " per worker";
    const auto place = worker_memory_place();
    if (!place.parent) {
        return {"memory limit",
                per_worker + ": cannot be set here, ptrun would not start (" + place.refusal + ")",
                source_of(o, Option::MemoryLimitPerWorker)};
    }
    const bool v2 = place.parent->version == 2;
    return {"memory limit",
            per_worker + ", each in a memory cgroup of its own: " + place.parent->dir +
                "/ptrun-PID-*/wN (cgroup v" + (v2 ? "2 memory.max" : "1 memory.limit_in_bytes") +
                (v2 ? "; ptrun moves itself into ptrun-PID-*/ptrun)" : ")"),
            source_of(o, Option::MemoryLimitPerWorker)};
}

}  // namespace ptrun::launcher
