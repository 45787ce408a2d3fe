#pragma once
/// The one interface every launch environment is read through: pure functions from the process
/// environment (and, where the launcher writes one, a host file's text) to a Topology. The
/// launcher (launcher/cli/launcher_env_defaults.hpp) picks a reader, reads the host file it
/// names, and fills the options the user left out from the topology.
///
/// Detection order (readers()): the launcher that started this very process wins over the
/// allocation it runs in, so mpirun inside a SLURM, PBS or LSF job is read as MPI:
///   1. mpi   OMPI_COMM_WORLD_SIZE (Open MPI), else PMI_RANK + PMI_SIZE (MPICH's Hydra, Intel
///            MPI) unless they are srun's own PMI (equal to SLURM_PROCID and the step's tasks)
///   2. lsf   JSM_NAMESPACE_SIZE (jsrun)
///   3. flux  FLUX_JOB_ID with FLUX_TASK_RANK
///   4. slurm SLURM_JOB_ID
///   5. pbs   PBS_JOBID
///   6. k8s   KUBERNETES_SERVICE_HOST with PET_NNODES, PET_NODE_RANK or JOB_COMPLETION_INDEX, or
///            with MASTER_ADDR, WORLD_SIZE and RANK (an older Kubeflow operator)

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ptrun/env/env_map.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"
#include "ptrun/schedulers/topology.hpp"

namespace ptrun::schedulers {

/// One environment's reader: three pure functions, no I/O.
struct Reader {
    LauncherKind kind;
    /// The variable that shows this environment started the process, or nullopt when `env`
    /// does not look like it.
    std::optional<std::string> (*found_by)(const env::EnvMap& env);
    /// The variable naming a host file the reader needs for `env` (PBS_NODEFILE,
    /// LSB_DJOB_HOSTFILE), or nullopt when it needs none.
    std::optional<std::string> (*host_file_var)(const env::EnvMap& env);
    /// The topology of `env`; `host_file` is the text of the file host_file_var named (nullopt
    /// when it named none). Checked with check_topology. Throws env::ParseError naming the
    /// variable and its value when one is missing, malformed or contradicts another.
    Topology (*read)(const env::EnvMap& env, std::optional<std::string_view> host_file);
};

/// Every reader, in detection order (above).
std::span<const Reader> readers();

/// The reader of `kind`.
const Reader& reader_for(LauncherKind kind);

/// The first reader, in detection order, whose found_by recognises `env`; nullptr when none.
const Reader* detect_reader(const env::EnvMap& env);

}  // namespace ptrun::schedulers
