// PBS Pro, OpenPBS and Torque. The job script and every task pbsdsh(1) or tm_spawn(3) starts get
// PBS_JOBID and PBS_NODEFILE, the file that lists the job's hosts, one line per slot (qsub(1),
// "PBS_NODEFILE"); pbsdsh's tasks also get PBS_NODENUM, the node's index, and PBS_TASKNUM
// (pbsdsh(1): "Users will find the PBS_TASKNUM, PBS_NODENUM, and the PBS_VNODENUM environmental
// variables useful. They contain the TM task id, the node identifier, and the cpu (virtual node)
// identifier"). One ptrun per node: `pbsdsh -u ptrun ...` (-u: once on each node), or the job
// script alone on a one-node job. An MPI launcher inside PBS is read as MPI.
#include "read_values.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

constexpr std::string_view kJobId = "PBS_JOBID";
constexpr std::string_view kNodeFile = "PBS_NODEFILE";
constexpr std::string_view kNodeNum = "PBS_NODENUM";

std::optional<std::string> found_by(const env::EnvMap& env) { return if_set(env, kJobId); }

std::optional<std::string> host_file_var(const env::EnvMap& env) { return if_set(env, kNodeFile); }

Topology read(const env::EnvMap& env, std::optional<std::string_view> host_file) {
    Topology t;
    t.kind = LauncherKind::Pbs;
    t.found_by = kJobId;
    if (auto id = optional_text(env, kJobId)) t.job_id = *id;
    if (!host_file) {
        throw env::ParseError(std::string(kNodeFile) +
                              " unset: PBS names the job's hosts in it (qsub sets it)");
    }
    const auto hosts = parse_host_file(*host_file, shown(env, kNodeFile));
    const int nodes = static_cast<int>(hosts.size());
    t.nodes = {nodes, "hosts in " + std::string(kNodeFile)};
    t.head_host =
        Sourced<std::string>{hosts.front().host, "first host of " + std::string(kNodeFile)};
    auto node = optional_int(env, kNodeNum, 0, kMaxTasks);
    t.batch_script = !node;
    if (!node) node = Sourced<int>{0, "the job script (no " + std::string(kNodeNum) + ")"};
    t.node_rank = node;
    t.rank = *node;
    t.world_size = {nodes, t.nodes.origin};
    t.local_rank = {0, "one ptrun per node"};
    t.local_world_size = {1, "one ptrun per node"};
    t.port = optional_int(env, "MASTER_PORT", 1, 65535);
    check_topology(t);
    return t;
}

}  // namespace

const Reader& pbs_reader() {
    static const Reader r{LauncherKind::Pbs, found_by, host_file_var, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
