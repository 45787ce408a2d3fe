// Kubernetes: one ptrun per pod, the pods being the nodes.
// - Kubeflow's PyTorchJob (training-operator, www.kubeflow.org/docs/components/trainer/legacy-v1/
//   user-guides/pytorch/) gives every pod MASTER_ADDR and MASTER_PORT (the master pod's service),
//   WORLD_SIZE and RANK (pods, this pod's index), and torchrun's PET_NNODES, PET_NODE_RANK,
//   PET_NPROC_PER_NODE; ptrun already reads PET_ variables as its options.
// - An indexed Job (kubernetes.io/docs/tasks/job/indexed-parallel-processing-static/) gives each
//   pod JOB_COMPLETION_INDEX, and names pods ${jobName}-${index} under a headless service
//   (kubernetes.io/docs/tasks/job/job-with-pod-to-pod-communication/): the pod template sets
//   PET_NNODES (the completions) and MASTER_ADDR (${jobName}-0.${service}).
// - JobSet (github.com/kubernetes-sigs/jobset,
// site/static/examples/simple/jobset-with-network.yaml)
//   names pods <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>, the subdomain being the
//   JobSet's name by default: with JOBSET_NAME and REPLICATED_JOB_NAME set, node 0 is
//   <jobset>-<replicatedJob>-0-0.<jobset>.
#include "read_values.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

constexpr std::string_view kService = "KUBERNETES_SERVICE_HOST";
constexpr std::string_view kNNodes = "PET_NNODES";
constexpr std::string_view kNodeRank = "PET_NODE_RANK";
constexpr std::string_view kIndex = "JOB_COMPLETION_INDEX";
constexpr std::string_view kWorldSize = "WORLD_SIZE";
constexpr std::string_view kRank = "RANK";
constexpr std::string_view kMasterAddr = "MASTER_ADDR";
constexpr std::string_view kJobSet = "JOBSET_NAME";
constexpr std::string_view kReplicatedJob = "REPLICATED_JOB_NAME";

std::optional<std::string> found_by(const env::EnvMap& env) {
    if (env.find(kService) == env.end()) return std::nullopt;
    for (auto name : {kNNodes, kNodeRank, kIndex}) {
        if (env.find(name) != env.end()) return std::string(name);
    }
    // An older Kubeflow operator: MASTER_ADDR with WORLD_SIZE and RANK counting pods (MASTER_ADDR
    // alone may be a pod's own setting for something else).
    for (auto name : {kMasterAddr, kWorldSize, kRank}) {
        if (env.find(name) == env.end()) return std::nullopt;
    }
    return std::string(kMasterAddr);
}

std::optional<std::string> no_host_file(const env::EnvMap&) { return std::nullopt; }

/// PET_NNODES as a fixed count: "4" or "4:4" (an elastic range is left to --nnodes).
std::optional<Sourced<int>> fixed_nnodes(const env::EnvMap& env) {
    auto text = optional_text(env, kNNodes);
    if (!text) return std::nullopt;
    auto colon = text->value.find(':');
    std::string_view low = std::string_view(text->value).substr(0, colon);
    auto n = env::parse_int(low);
    if (!n || *n < 1 || *n > kMaxTasks) {
        throw env::ParseError(shown(env, kNNodes) + ": expected a node count N or MIN:MAX");
    }
    if (colon != std::string::npos && std::string_view(text->value).substr(colon + 1) != low) {
        return std::nullopt;  // elastic MIN:MAX: the nodes are counted at rendezvous
    }
    return Sourced<int>{static_cast<int>(*n), std::string(kNNodes)};
}

Topology read(const env::EnvMap& env, std::optional<std::string_view>) {
    Topology t;
    t.kind = LauncherKind::K8s;
    t.found_by = found_by(env).value_or("--launcher-env k8s");
    auto nodes = fixed_nnodes(env);
    if (!nodes) nodes = optional_int(env, kWorldSize, 1, kMaxTasks);  // Kubeflow: pods
    if (!nodes) {
        throw env::ParseError(std::string(kNNodes) +
                              " unset: set it to the number of pods in the pod template (an "
                              "indexed Job's completions), or pass --nnodes");
    }
    t.nodes = *nodes;
    auto node = optional_int(env, kNodeRank, 0, kMaxTasks);
    if (!node) node = optional_int(env, kIndex, 0, kMaxTasks);
    if (!node) node = optional_int(env, kRank, 0, kMaxTasks);  // Kubeflow: this pod's index
    if (!node) {
        throw env::ParseError(std::string(kIndex) + " and " + std::string(kNodeRank) +
                              " unset: the pod's index is needed (an indexed Job sets " +
                              std::string(kIndex) + ")");
    }
    t.node_rank = node;
    t.rank = *node;
    t.world_size = t.nodes;
    t.local_rank = {0, "one ptrun per pod"};
    t.local_world_size = {1, "one ptrun per pod"};
    t.head_host = optional_host(env, kMasterAddr);
    if (!t.head_host) {
        auto jobset = optional_text(env, kJobSet);
        auto rjob = optional_text(env, kReplicatedJob);
        if (jobset && rjob) {
            std::string host = jobset->value + "-" + rjob->value + "-0-0." + jobset->value;
            t.head_host = Sourced<std::string>{host, "JobSet's first pod: " + std::string(kJobSet) +
                                                         ", " + std::string(kReplicatedJob)};
            check_host_name(host, shown(env, kJobSet) + ", " + shown(env, kReplicatedJob));
            if (auto job = optional_text(env, "JOB_INDEX"); job && job->value != "0") {
                throw env::ParseError(shown(env, "JOB_INDEX") +
                                      ": a JobSet of several replicated Jobs is not read; set "
                                      "PET_NODE_RANK and MASTER_ADDR in the pod template");
            }
        }
    }
    t.port = optional_int(env, "MASTER_PORT", 1, 65535);
    if (auto id = optional_text(env, kJobSet)) t.job_id = *id;
    check_topology(t);
    return t;
}

}  // namespace

const Reader& k8s_reader() {
    static const Reader r{LauncherKind::K8s, found_by, no_host_file, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
