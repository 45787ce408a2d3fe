// LSF with IBM Job Step Manager: every task jsrun(1) starts gets JSM_NAMESPACE_RANK,
// JSM_NAMESPACE_SIZE, JSM_NAMESPACE_LOCAL_RANK and JSM_NAMESPACE_LOCAL_SIZE (IBM's jsrun
// documentation, www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=jsrun; Lightning's LSFEnvironment
// reads the same), and LSF gives the job LSB_JOBID and its hosts: LSB_DJOB_HOSTFILE, a file of one
// line per slot, else LSB_MCPU_HOSTS, "host slots" pairs (LSF's "Environment variables set for job
// execution"). On CORAL-style clusters the first host is the launch node, which holds one slot and
// runs no jsrun task; it is left out when the hosts outnumber the tasks' nodes.
#include "read_values.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

constexpr std::string_view kSize = "JSM_NAMESPACE_SIZE";
constexpr std::string_view kRank = "JSM_NAMESPACE_RANK";
constexpr std::string_view kLocalRank = "JSM_NAMESPACE_LOCAL_RANK";
constexpr std::string_view kLocalSize = "JSM_NAMESPACE_LOCAL_SIZE";
constexpr std::string_view kJobId = "LSB_JOBID";
constexpr std::string_view kHostFile = "LSB_DJOB_HOSTFILE";
constexpr std::string_view kMcpuHosts = "LSB_MCPU_HOSTS";

std::optional<std::string> found_by(const env::EnvMap& env) { return if_set(env, kSize); }

std::optional<std::string> host_file_var(const env::EnvMap& env) { return if_set(env, kHostFile); }

Topology read(const env::EnvMap& env, std::optional<std::string_view> host_file) {
    constexpr std::string_view needed = "jsrun sets it on every task";
    Topology t;
    t.kind = LauncherKind::Lsf;
    t.found_by = kSize;
    if (auto id = optional_text(env, kJobId)) t.job_id = *id;
    t.world_size = required_int(env, kSize, 1, kMaxTasks, needed);
    t.rank = required_int(env, kRank, 0, kMaxTasks, needed);
    t.local_world_size = required_int(env, kLocalSize, 1, kMaxTasks, needed);
    t.local_rank = required_int(env, kLocalRank, 0, kMaxTasks, needed);
    t.nodes = t.local_world_size.value == t.world_size.value
                  ? Sourced<int>{1, std::string(kLocalSize) + " = " + std::string(kSize)}
                  : nodes_from_sizes(t.world_size, t.local_world_size);
    std::vector<HostSlots> hosts;
    std::string from;
    if (host_file) {
        hosts = parse_host_file(*host_file, shown(env, kHostFile));
        from = std::string(kHostFile);
    } else if (auto pairs = optional_text(env, kMcpuHosts, kMaxHostFileBytes)) {
        hosts = parse_host_count_pairs(pairs->value, shown(env, kMcpuHosts));
        from = std::string(kMcpuHosts);
    }
    if (!hosts.empty()) {
        std::size_t first = 0;
        if (hosts.size() > static_cast<std::size_t>(t.nodes.value) && hosts.front().slots == 1) {
            first = 1;  // the launch node
        }
        if (hosts.size() - first < static_cast<std::size_t>(t.nodes.value)) {
            throw env::ParseError(from + " names " + std::to_string(hosts.size() - first) +
                                  " compute hosts, but the tasks run on " +
                                  std::to_string(t.nodes.value) + " nodes (" + t.nodes.origin +
                                  ")");
        }
        t.head_host = Sourced<std::string>{hosts[first].host,
                                           (first ? "second host of " : "first host of ") + from +
                                               (first ? ", the first being the launch node" : "")};
    }
    if (auto addr = optional_host(env, "MASTER_ADDR")) t.head_host = addr;
    t.port = optional_int(env, "MASTER_PORT", 1, 65535);
    check_topology(t);
    return t;
}

}  // namespace

const Reader& lsf_reader() {
    static const Reader r{LauncherKind::Lsf, found_by, host_file_var, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
