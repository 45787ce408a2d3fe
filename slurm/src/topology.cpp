#include "ptrun/slurm/topology.hpp"

#include <stdexcept>

namespace ptrun::slurm {

std::string head_host(const SlurmJob& job) {
    if (job.nodes.empty()) throw std::invalid_argument("SlurmJob has an empty node list");
    return job.nodes.front();
}

std::uint16_t derive_port(std::uint32_t job_id) {
    return static_cast<std::uint16_t>(kPortBase + job_id % kPortSpan);
}

std::string run_id(const SlurmJob& job) {
    std::string id = "slurm-" + std::to_string(job.job_id);
    if (job.step_id) id.append(".").append(std::to_string(*job.step_id));
    return id;
}

std::optional<int> gpus_on_node(const SlurmJob& job) {
    if (job.cuda_visible_devices) return job.cuda_visible_devices;
    return job.gpus_on_node;
}

TaskMode detect_task_mode(const SlurmJob& job) {
    return job.ntasks > job.num_nodes ? TaskMode::PerRank : TaskMode::PerNode;
}

env::RankPlace rank_layout(const SlurmJob& job) {
    auto node = static_cast<std::size_t>(job.node_id);
    return env::RankPlace{
        .rank = job.proc_id,
        .local_rank = job.local_id,
        .world_size = job.ntasks,
        .local_world_size = node < job.tasks_per_node.size() ? job.tasks_per_node[node] : 0,
        .group_rank = job.node_id,
        .group_world_size = job.num_nodes,
    };
}

}  // namespace ptrun::slurm
