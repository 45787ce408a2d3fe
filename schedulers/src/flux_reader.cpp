// Flux (flux run / flux submit). flux-environment(7), "JOB ENVIRONMENT"
// (flux-framework/flux-core doc/man7/flux-environment.rst): every task gets FLUX_JOB_ID (F58
// form), FLUX_JOB_SIZE (tasks in the job), FLUX_JOB_NNODES (nodes hosting its tasks),
// FLUX_TASK_RANK (global task rank) and FLUX_TASK_LOCAL_ID (rank on the node). No host list
// reaches the tasks: the master address is MASTER_ADDR, or this host on one node.
#include "read_values.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

constexpr std::string_view kJobId = "FLUX_JOB_ID";
constexpr std::string_view kSize = "FLUX_JOB_SIZE";
constexpr std::string_view kNNodes = "FLUX_JOB_NNODES";
constexpr std::string_view kRank = "FLUX_TASK_RANK";
constexpr std::string_view kLocalId = "FLUX_TASK_LOCAL_ID";

std::optional<std::string> found_by(const env::EnvMap& env) {
    if (env.find(kJobId) == env.end() || env.find(kRank) == env.end()) return std::nullopt;
    return std::string(kJobId);
}

std::optional<std::string> no_host_file(const env::EnvMap&) { return std::nullopt; }

Topology read(const env::EnvMap& env, std::optional<std::string_view>) {
    constexpr std::string_view needed = "flux run sets it on every task";
    Topology t;
    t.kind = LauncherKind::Flux;
    t.found_by = kJobId;
    if (auto id = optional_text(env, kJobId)) t.job_id = *id;
    t.world_size = required_int(env, kSize, 1, kMaxTasks, needed);
    t.rank = required_int(env, kRank, 0, kMaxTasks, needed);
    t.local_rank = required_int(env, kLocalId, 0, kMaxTasks, needed);
    t.nodes = required_int(env, kNNodes, 1, kMaxTasks, needed);
    // Flux gives no per-node count: the tasks spread evenly (flux run -N2 -n8: 4 per node).
    t.local_world_size = nodes_from_sizes(t.world_size, t.nodes);
    t.local_world_size.origin = std::string(kSize) + " / " + std::string(kNNodes);
    t.head_host = optional_host(env, "MASTER_ADDR");
    t.port = optional_int(env, "MASTER_PORT", 1, 65535);
    check_topology(t);
    return t;
}

}  // namespace

const Reader& flux_reader() {
    static const Reader r{LauncherKind::Flux, found_by, no_host_file, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
