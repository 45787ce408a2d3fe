#include "ptrun/launcher/option.hpp"

#include <array>

namespace ptrun::launcher {
namespace {

constexpr auto V = OptionKind::Value;
constexpr auto F = OptionKind::Flag;

// key, dashed, underscored, PET_ variable, short name, default, kind, help.
constexpr std::array<OptionSpec, kOptionCount> kTable{{
    {Option::Nnodes, "nnodes", "nnodes", "PET_NNODES", "", "1:1", V,
     "Number of nodes, N or MIN:MAX"},
    {Option::NprocPerNode, "nproc-per-node", "nproc_per_node", "PET_NPROC_PER_NODE", "", "1", V,
     "Workers per node: an integer, auto, cpu, gpu, or gpu:LIST (one worker per listed device, "
     "e.g. gpu:1,3,5 or gpu:0-3; indexes into the devices CUDA_VISIBLE_DEVICES shows)"},
    {Option::Standalone, "standalone", "standalone", "PET_STANDALONE", "", "", F,
     "Single-node job with a local store on a free port"},
    {Option::RdzvBackend, "rdzv-backend", "rdzv_backend", "PET_RDZV_BACKEND", "", "static", V,
     "Rendezvous backend: static or c10d"},
    {Option::RdzvEndpoint, "rdzv-endpoint", "rdzv_endpoint", "PET_RDZV_ENDPOINT", "", "", V,
     "Rendezvous endpoint HOST[:PORT]"},
    {Option::RdzvId, "rdzv-id", "rdzv_id", "PET_RDZV_ID", "", "none", V,
     "Job id shared by every node of the job"},
    {Option::RdzvConf, "rdzv-conf", "rdzv_conf", "PET_RDZV_CONF", "", "", V,
     "Rendezvous settings key=value,key=value"},
    {Option::NodeRank, "node-rank", "node_rank", "PET_NODE_RANK", "", "0", V,
     "Rank of this node (static rendezvous)"},
    {Option::MasterAddr, "master-addr", "master_addr", "PET_MASTER_ADDR", "", "127.0.0.1", V,
     "Address of the node hosting the store"},
    {Option::MasterPort, "master-port", "master_port", "PET_MASTER_PORT", "", "", V,
     "Port of the store (default: a free port held by ptrun)"},
    {Option::LocalAddr, "local-addr", "local_addr", "PET_LOCAL_ADDR", "", "", V,
     "Address this node advertises"},
    {Option::MaxRestarts, "max-restarts", "max_restarts", "PET_MAX_RESTARTS", "", "0", V,
     "Restarts of the worker group before giving up"},
    {Option::MonitorInterval, "monitor-interval", "monitor_interval", "PET_MONITOR_INTERVAL", "",
     "0.1", V, "Accepted for compatibility; supervision is event-driven"},
    {Option::StartMethod, "start-method", "start_method", "PET_START_METHOD", "", "spawn", V,
     "Accepted for compatibility: spawn, fork or forkserver"},
    {Option::Role, "role", "role", "PET_ROLE", "", "default", V, "Worker role name (ROLE_NAME)"},
    {Option::Module, "module", "module", "PET_MODULE", "-m", "", F,
     "Run the program as a Python module (python3 -u -m PROGRAM)"},
    {Option::NoPython, "no-python", "no_python", "PET_NO_PYTHON", "", "", F,
     "Execute the program directly, not through python3"},
    {Option::RunPath, "run-path", "run_path", "PET_RUN_PATH", "", "", F,
     "Accepted for compatibility; the script runs as python3 -u SCRIPT"},
    {Option::LogDir, "log-dir", "log_dir", "PET_LOG_DIR", "", "", V,
     "Directory for per-worker logs and error files, a directory per run: "
     "RUN-ID_HOST_TIME_RANDOM/attempt_N/LOCAL_RANK/; DIR/latest links to the newest"},
    {Option::Redirects, "redirects", "redirects", "PET_REDIRECTS", "-r", "0", V,
     "Streams sent to log files: 0-3 or LOCAL_RANK:0-3,..."},
    {Option::Tee, "tee", "tee", "PET_TEE", "-t", "0", V,
     "Streams sent to log files and the console: 0-3 or LOCAL_RANK:0-3,..."},
    {Option::LocalRanksFilter, "local-ranks-filter", "local_ranks_filter", "PET_LOCAL_RANKS_FILTER",
     "", "", V,
     "Show console output of these local ranks only: 0,1,... (each must run on this node)"},
    {Option::ShutdownTimeout, "shutdown-timeout", "shutdown_timeout", "PET_SHUTDOWN_TIMEOUT", "",
     "30", V, "Seconds between SIGTERM and SIGKILL when stopping workers"},
    {Option::SignalsToHandle, "signals-to-handle", "signals_to_handle", "PET_SIGNALS_TO_HANDLE", "",
     "SIGINT,SIGTERM,SIGHUP,SIGUSR1,SIGUSR2", V, "Signals forwarded to every worker group"},
    {Option::SlurmMode, "slurm-mode", "slurm_mode", "PET_SLURM_MODE", "", "auto", V,
     "Inside a SLURM step: auto, per-node (ptrun spawns the node's workers), per-rank (SLURM "
     "started one task per rank; each ptrun runs one worker) or off (ignore SLURM)"},
    {Option::VirtualLocalRank, "virtual-local-rank", "virtual_local_rank", "PET_VIRTUAL_LOCAL_RANK",
     "", "", F, "Every worker gets LOCAL_RANK=0 and sees only its own GPU in CUDA_VISIBLE_DEVICES"},
    {Option::NumaBinding, "numa-binding", "numa_binding", "PET_NUMA_BINDING", "", "", V,
     "Bind each worker's CPUs and memory near its GPU: node, socket, exclusive or core-complex "
     "(inside ptrun's own CPU set)"},
    {Option::ReportBindings, "report-bindings", "report_bindings", "PET_REPORT_BINDINGS", "", "", F,
     "Print one line per worker at start: rank, CPUs, memory nodes, GPUs"},
    {Option::DuplicateStdoutFilters, "duplicate-stdout-filters", "duplicate_stdout_filters",
     "PET_DUPLICATE_STDOUT_FILTERS", "", "", V,
     "Also copy worker stdout lines containing any of these comma-separated substrings (',,' "
     "for a comma) to attempt_N/filtered_stdout.log in the run's log directory"},
    {Option::DuplicateStderrFilters, "duplicate-stderr-filters", "duplicate_stderr_filters",
     "PET_DUPLICATE_STDERR_FILTERS", "", "", V,
     "As --duplicate-stdout-filters, for stderr: attempt_N/filtered_stderr.log"},
    {Option::HangTimeout, "hang-timeout", "hang_timeout", "PET_HANG_TIMEOUT", "", "", V,
     "Seconds without progress (heartbeats, collectives) after which a worker is hung: its "
     "stacks are captured and the group is stopped (default: off; see man ptrun, HANGS)"},
    {Option::HealthPort, "health-port", "health_port", "PET_HEALTH_PORT", "", "", V,
     "Serve HTTP GET /health and /status on this port (0: any free port, printed)"},
    {Option::HealthAddr, "health-addr", "health_addr", "PET_HEALTH_ADDR", "", "127.0.0.1", V,
     "Address the health endpoint listens on"},
    {Option::Explain, "explain", "explain", "PET_EXPLAIN", "", "", F,
     "Print the resolved topology and where each value came from; launch nothing"},
}};

/// True when row i is Option i: then option_spec() is an index and no enumerator lacks a row.
constexpr bool rows_in_enumerator_order() {
    for (std::size_t i = 0; i < kTable.size(); ++i) {
        if (static_cast<std::size_t>(kTable[i].key) != i) return false;
    }
    return true;
}
static_assert(rows_in_enumerator_order(), "kTable: one row per Option, in enumerator order");

}  // namespace

std::span<const OptionSpec> option_table() { return kTable; }

const OptionSpec& option_spec(Option key) { return kTable[static_cast<std::size_t>(key)]; }

std::string_view option_name(Option key) { return option_spec(key).dashed; }

std::string flag_text(Option key) { return "--" + std::string(option_name(key)); }

}  // namespace ptrun::launcher
