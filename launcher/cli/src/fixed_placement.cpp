#include "ptrun/launcher/cli/fixed_placement.hpp"

#include "ptrun/slurm/topology.hpp"

namespace ptrun::launcher {

FixedPlacement placement_from_slurm(const slurm::SlurmJob& job) {
    FixedPlacement p;
    p.place() = slurm::rank_layout(job);
    p.hosts_store = job.node_id == 0 && job.local_id == 0;
    return p;
}

void apply_placement(const FixedPlacement& p, env::WorkerIdentity& id) {
    id.place() = p;
    id.role_rank = p.rank;
    id.role_world_size = p.world_size;
}

}  // namespace ptrun::launcher
