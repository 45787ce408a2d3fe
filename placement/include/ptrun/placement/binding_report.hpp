#pragma once
/// --report-bindings: one line per worker at start, like mpirun's, saying where it really runs.

#include <string>

#include "ptrun/placement/id_set.hpp"

namespace ptrun::placement {

/// One worker's placement as started.
struct WorkerPlacement {
    std::string host;
    int rank = 0;
    int local_rank = 0;
    IdSet cpus;          ///< its affinity (bound or inherited)
    bool bound = false;  ///< true when ptrun set `cpus` (--numa-binding), false when inherited
    IdSet mems;          ///< preferred memory nodes; empty: the default policy
    std::string gpus;    ///< its CUDA_VISIBLE_DEVICES; empty when unset
};

/// "[host] rank 3 (local 1): cpus 28-55,140-167 bound, memory preferred on node 1, gpus 2"; an
/// unbound worker reads "cpus 0-223 inherited, memory default"; no GPU reads "gpus none".
std::string binding_report_line(const WorkerPlacement& w);

}  // namespace ptrun::placement
