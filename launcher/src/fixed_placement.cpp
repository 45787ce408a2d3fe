#include "ptrun/launcher/fixed_placement.hpp"

#include "ptrun/slurm/topology.hpp"

namespace ptrun::launcher {

FixedPlacement placement_from_slurm(const slurm::SlurmJob& job) {
    auto layout = slurm::rank_layout(job);
    FixedPlacement p;
    p.rank = layout.rank;
    p.local_rank = layout.local_rank;
    p.world_size = layout.world_size;
    p.local_world_size = layout.local_world_size;
    p.group_rank = layout.node_rank;
    p.group_world_size = layout.num_nodes;
    p.hosts_store = job.node_id == 0 && job.local_id == 0;
    return p;
}

void apply_placement(const FixedPlacement& p, env::WorkerIdentity& id) {
    id.rank = p.rank;
    id.local_rank = p.local_rank;
    id.world_size = p.world_size;
    id.local_world_size = p.local_world_size;
    id.group_rank = p.group_rank;
    id.group_world_size = p.group_world_size;
    id.role_rank = p.rank;
    id.role_world_size = p.world_size;
}

}  // namespace ptrun::launcher
