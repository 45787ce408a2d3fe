// MPI launchers. Open MPI (mpirun, prterun) sets, on every process (docs.open-mpi.org, "Environment
// variables set for MPI applications"): OMPI_COMM_WORLD_SIZE, _RANK, _LOCAL_SIZE, _LOCAL_RANK,
// _NODE_RANK, OMPI_UNIVERSE_SIZE; Open MPI 4.x also OMPI_MCA_orte_num_nodes and
// OMPI_MCA_ess_base_jobid, and PMIx its PMIX_RANK. MPICH's Hydra and Intel MPI set PMI_RANK,
// PMI_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS. Neither names the job's hosts to its processes:
// the master address is MASTER_ADDR (mpirun -x MASTER_ADDR=node1 / -genv), or this host when
// every rank runs on it.
#include "ptrun/slurm/variables.hpp"
#include "read_values.hpp"
#include "reader_table.hpp"

namespace ptrun::schedulers::detail {
namespace {

constexpr std::string_view kOmpiSize = "OMPI_COMM_WORLD_SIZE";
constexpr std::string_view kOmpiRank = "OMPI_COMM_WORLD_RANK";
constexpr std::string_view kOmpiLocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE";
constexpr std::string_view kOmpiLocalRank = "OMPI_COMM_WORLD_LOCAL_RANK";
constexpr std::string_view kOmpiNumNodes = "OMPI_MCA_orte_num_nodes";
constexpr std::string_view kOmpiJobId = "OMPI_MCA_ess_base_jobid";
constexpr std::string_view kPmixRank = "PMIX_RANK";
constexpr std::string_view kPmixNamespace = "PMIX_NAMESPACE";
constexpr std::string_view kPmiRank = "PMI_RANK";
constexpr std::string_view kPmiSize = "PMI_SIZE";
constexpr std::string_view kPmiJobId = "PMI_JOBID";
constexpr std::string_view kLocalRankId = "MPI_LOCALRANKID";
constexpr std::string_view kLocalNRanks = "MPI_LOCALNRANKS";

/// True when PMI_RANK/PMI_SIZE are srun's own PMI-2 (srun --mpi=pmi2 sets them alongside
/// SLURM_PROCID): then SLURM, which also names the hosts, reads the task.
bool srun_pmi(const env::EnvMap& env) {
    auto proc = env::lookup(env, slurm::var::kProcId);
    if (!proc || env::lookup(env, kPmiRank) != proc) return false;
    for (auto name : {slurm::var::kStepNumTasks, slurm::var::kNTasks}) {
        if (auto tasks = env::lookup(env, name)) return env::lookup(env, kPmiSize) == tasks;
    }
    return false;
}

std::optional<std::string> found_by(const env::EnvMap& env) {
    if (env.find(kOmpiSize) != env.end()) return std::string(kOmpiSize);
    if (env.find(kPmiRank) != env.end() && env.find(kPmiSize) != env.end() && !srun_pmi(env))
        return std::string(kPmiSize);
    return std::nullopt;
}

std::optional<std::string> no_host_file(const env::EnvMap&) { return std::nullopt; }

constexpr std::string_view kNeeded = "every MPI process gets it from its launcher";

Topology read_open_mpi(const env::EnvMap& env) {
    Topology t;
    t.found_by = kOmpiSize;
    t.world_size = required_int(env, kOmpiSize, 1, kMaxTasks, kNeeded);
    t.rank = required_int(env, kOmpiRank, 0, kMaxTasks, kNeeded);
    t.local_world_size = required_int(env, kOmpiLocalSize, 1, kMaxTasks, kNeeded);
    t.local_rank = required_int(env, kOmpiLocalRank, 0, kMaxTasks, kNeeded);
    if (auto pmix = optional_int(env, kPmixRank, 0, kMaxTasks);
        pmix && pmix->value != t.rank.value) {
        throw env::ParseError(shown(env, kPmixRank) + " contradicts " + shown(env, kOmpiRank));
    }
    if (auto nodes = optional_int(env, kOmpiNumNodes, 1, kMaxTasks)) {
        t.nodes = *nodes;
    } else if (t.local_world_size.value == t.world_size.value) {
        t.nodes = {1, std::string(kOmpiLocalSize) + " = " + std::string(kOmpiSize)};
    } else {
        t.nodes = nodes_from_sizes(t.world_size, t.local_world_size);
    }
    if (auto id = optional_text(env, kOmpiJobId)) {
        t.job_id = *id;
    } else if (auto ns = optional_text(env, kPmixNamespace)) {
        t.job_id = *ns;
    }
    return t;
}

Topology read_hydra(const env::EnvMap& env) {
    constexpr std::string_view hydra =
        "MPICH's Hydra and Intel MPI set it with PMI_RANK; other PMI launchers are not read "
        "(pass --launcher-env off and the options)";
    Topology t;
    t.found_by = kPmiSize;
    t.world_size = required_int(env, kPmiSize, 1, kMaxTasks, kNeeded);
    t.rank = required_int(env, kPmiRank, 0, kMaxTasks, kNeeded);
    t.local_world_size = required_int(env, kLocalNRanks, 1, kMaxTasks, hydra);
    t.local_rank = required_int(env, kLocalRankId, 0, kMaxTasks, hydra);
    t.nodes = t.local_world_size.value == t.world_size.value
                  ? Sourced<int>{1, std::string(kLocalNRanks) + " = " + std::string(kPmiSize)}
                  : nodes_from_sizes(t.world_size, t.local_world_size);
    if (auto id = optional_text(env, kPmiJobId)) t.job_id = *id;
    return t;
}

Topology read(const env::EnvMap& env, std::optional<std::string_view>) {
    Topology t = env.find(kOmpiSize) != env.end() ? read_open_mpi(env) : read_hydra(env);
    t.kind = LauncherKind::Mpi;
    t.head_host = optional_host(env, "MASTER_ADDR");
    t.port = optional_int(env, "MASTER_PORT", 1, 65535);
    check_topology(t);
    return t;
}

}  // namespace

const Reader& mpi_reader() {
    static const Reader r{LauncherKind::Mpi, found_by, no_host_file, read};
    return r;
}

}  // namespace ptrun::schedulers::detail
