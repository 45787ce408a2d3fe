#include "ptrun/launcher/cli/option.hpp"

#include <utility>
#include <algorithm>
#include <array>
#include <vector>

namespace ptrun::launcher {
namespace {

constexpr auto V = OptionKind::Value;
constexpr auto F = OptionKind::Flag;

/// One option as written in the table: an OptionSpec less what derives from the dashed name.
struct Row {
    Option key;
    std::string_view dashed;
    std::string_view short_name;
    std::string_view fallback;
    OptionKind kind;
    std::string_view help;
};

// key, dashed name, short name, default, kind, help. The underscored spelling and the PET_
// variable derive from the dashed name (kTable below).
constexpr std::array<Row, kOptionCount> kRows{{
    {Option::Nnodes, "nnodes", "", "1:1", V, "Number of nodes, N or MIN:MAX"},
    {Option::NprocPerNode, "nproc-per-node", "", "1", V,
     "Workers per node: an integer, auto, cpu, gpu (NVIDIA or AMD), xpu (Intel GPU), hpu "
     "(Gaudi), npu (Ascend), or KIND:LIST (one worker per listed device, e.g. gpu:1,3,5 or "
     "xpu:0-3; indexes into the devices the vendor's variable, e.g. CUDA_VISIBLE_DEVICES, shows)"},
    {Option::Standalone, "standalone", "", "", F,
     "Single-node job with a local store on a free port"},
    {Option::RdzvBackend, "rdzv-backend", "", "static", V,
     "Rendezvous backend: static, c10d or etcd-v2"},
    {Option::RdzvEndpoint, "rdzv-endpoint", "", "", V,
     "Rendezvous endpoint HOST[:PORT] (etcd-v2: every etcd member, HOST[:PORT],...)"},
    {Option::RdzvId, "rdzv-id", "", "none", V, "Job id shared by every node of the job"},
    {Option::RdzvConf, "rdzv-conf", "", "", V, "Rendezvous settings key=value,key=value"},
    {Option::NodeRank, "node-rank", "", "0", V, "Rank of this node (static rendezvous)"},
    {Option::MasterAddr, "master-addr", "", "127.0.0.1", V,
     "Address of the node hosting the store"},
    {Option::MasterPort, "master-port", "", "", V,
     "Port of the store (default: a free port held by ptrun)"},
    {Option::LocalAddr, "local-addr", "", "", V, "Address this node advertises"},
    {Option::MaxRestarts, "max-restarts", "", "0", V,
     "Restarts of the worker group before giving up"},
    {Option::RestartPolicy, "restart-policy", "", "group", V,
     "What a worker's failure restarts: group (every worker, as torchrun) or failed (that worker "
     "alone, the others keep running and join the next generation; one node)"},
    {Option::RecoveryTimeout, "recovery-timeout", "", "60", V,
     "Seconds the survivors have to join a replacement's generation before the group restarts"},
    {Option::MonitorInterval, "monitor-interval", "", "0.1", V,
     "Accepted for compatibility; supervision is event-driven"},
    {Option::StartMethod, "start-method", "", "spawn", V,
     "Accepted for compatibility: spawn, fork or forkserver"},
    {Option::Role, "role", "", "default", V, "Worker role name (ROLE_NAME)"},
    {Option::Module, "module", "-m", "", F,
     "Run the program as a Python module (python3 -u -m PROGRAM)"},
    {Option::NoPython, "no-python", "", "", F, "Execute the program directly, not through python3"},
    {Option::NoRunner, "no-runner", "", "", F,
     "Run Python workers as plain python3 -u, without ptrun's runner (progress from optimizer "
     "steps, Python stacks on a hang; see man ptrun, PYTHON WORKERS)"},
    {Option::Preload, "preload", "", "", V,
     "Python modules to import once per node, comma-separated (e.g. torch,numpy); every worker "
     "of every attempt is then forked from that interpreter (man ptrun, WARM START)"},
    {Option::RunPath, "run-path", "", "", F,
     "Accepted for compatibility; the script runs as python3 -u SCRIPT"},
    {Option::LogsSpecs, "logs-specs", "", "", V,
     "torchrun 2.x: a Python LogsSpecs entry point; refused: ptrun's log layout is --log-dir, "
     "--redirects and --tee"},
    {Option::EventLogHandler, "event-log-handler", "", "null", V,
     "torchrun 2.x: where torch's elastic events go; only null (the default) is accepted: see "
     "the run's log directory and /status"},
    {Option::LogDir, "log-dir", "", "", V,
     "Directory for per-worker logs and error files, a directory per run: "
     "RUN-ID_HOST_TIME_RANDOM/attempt_N/LOCAL_RANK/; DIR/latest links to the newest"},
    {Option::Redirects, "redirects", "-r", "0", V,
     "Streams sent to log files: 0-3 or LOCAL_RANK:0-3,..."},
    {Option::Tee, "tee", "-t", "0", V,
     "Streams sent to log files and the console: 0-3 or LOCAL_RANK:0-3,..."},
    {Option::LocalRanksFilter, "local-ranks-filter", "", "", V,
     "Show console output of these local ranks only: 0,1,... (each must run on this node)"},
    {Option::LogLinePrefixTemplate, "log-line-prefix-template", "", "", V,
     "Prefix of tee'd console lines and filtered_*.log lines instead of [HOST:RANK]: a template "
     "of ${role_name}, ${rank}, ${local_rank}, ${pid}, ${hostname} ($$ for a $)"},
    {Option::ShutdownTimeout, "shutdown-timeout", "", "30", V,
     "Seconds between SIGTERM and SIGKILL when stopping workers"},
    {Option::SignalsToHandle, "signals-to-handle", "",
     "SIGINT,SIGTERM,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2", V, "Signals forwarded to every worker group"},
    {Option::CheckpointSignal, "checkpoint-signal", "", "", V,
     "On this signal (or SIGTERM), send it to every worker, wait --checkpoint-grace for them to "
     "exit on their own, then stop the rest (e.g. SIGUSR1; default: none; man ptrun, PREEMPTION)"},
    {Option::CheckpointGrace, "checkpoint-grace", "", "60", V,
     "Seconds the workers have to checkpoint and exit after --checkpoint-signal"},
    {Option::Requeue, "requeue", "", "", F,
     "Under SLURM: once the workers of every node have exited on --checkpoint-signal, node rank "
     "0 requeues the job (scontrol requeue); workers see PTRUN_REQUEUE_COUNT"},
    {Option::StoreRelay, "store-relay", "", "", F,
     "Each node's workers reach the store through their agent, which relays for them over a few "
     "connections (MASTER_ADDR=127.0.0.1 and MASTER_PORT are the relay's): for jobs of many "
     "ranks per node; man ptrun, SCALE"},
    {Option::SlurmMode, "slurm-mode", "", "auto", V,
     "Inside a SLURM step: auto, per-node (ptrun spawns the node's workers), per-rank (SLURM "
     "started one task per rank; each ptrun runs one worker) or off (ignore SLURM)"},
    {Option::LauncherEnv, "launcher-env", "", "auto", V,
     "Take left-out options from the launch environment: auto (detect), slurm, mpi (Open MPI, "
     "MPICH, Intel MPI), flux, pbs, lsf (jsrun), k8s (Kubeflow, indexed Job, JobSet) or off"},
    {Option::VirtualLocalRank, "virtual-local-rank", "", "", F,
     "Every worker gets LOCAL_RANK=0 and sees only its own GPU in CUDA_VISIBLE_DEVICES"},
    {Option::NumaBinding, "numa-binding", "", "", V,
     "Bind each worker's CPUs and memory near its GPU: node, socket, exclusive or core-complex "
     "(inside ptrun's own CPU set)"},
    {Option::ReportBindings, "report-bindings", "", "", F,
     "Print one line per worker at start: rank, CPUs, memory nodes, GPUs"},
    {Option::MemoryLimitPerWorker, "memory-limit-per-worker", "", "", V,
     "Give each worker a memory cgroup limited to SIZE (e.g. 24G, 512M): the OOM killer then "
     "ends the worker that grew; refused where no memory cgroup can be made"},
    {Option::DuplicateStdoutFilters, "duplicate-stdout-filters", "", "", V,
     "Also copy worker stdout lines containing any of these comma-separated substrings (',,' "
     "for a comma) to attempt_N/filtered_stdout.log in the run's log directory"},
    {Option::DuplicateStderrFilters, "duplicate-stderr-filters", "", "", V,
     "As --duplicate-stdout-filters, for stderr: attempt_N/filtered_stderr.log"},
    {Option::HangTimeout, "hang-timeout", "", "", V,
     "Seconds without progress (heartbeats, collectives) after which a worker is hung: its "
     "stacks are captured and the group is stopped (default: off; see man ptrun, HANGS)"},
    {Option::HealthPort, "health-port", "", "", V,
     "Serve HTTP GET /health and /status on this port (0: any free port, printed)"},
    {Option::HealthAddr, "health-addr", "", "127.0.0.1", V,
     "Address the health endpoint listens on"},
    {Option::Hosts, "hosts", "", "", V,
     "Start one ptrun per host from here through --remote-shell: HOST[:SLOTS],... (SLOTS: the "
     "host's --nproc-per-node; see man ptrun, MANY HOSTS FROM ONE COMMAND)"},
    {Option::Hostfile, "hostfile", "", "", V,
     "As --hosts, from a file: one HOST [slots=N] a line, # comments (DeepSpeed's and Open MPI's "
     "hostfile syntax)"},
    {Option::Include, "include", "", "", V,
     "With --hosts/--hostfile: only these hosts, HOST[:SLOTS],... (SLOTS: how many of its slots)"},
    {Option::Exclude, "exclude", "", "", V,
     "With --hosts/--hostfile: leave out these hosts, HOST[:SLOTS],... (SLOTS: that many fewer "
     "slots)"},
    {Option::RemoteShell, "remote-shell", "", "ssh -o BatchMode=yes", V,
     "How --hosts starts ptrun on a host: run as CMD HOST COMMAND, as ssh takes them (words split "
     "at spaces, '...' and \"...\" quote; nothing expanded)"},
    {Option::RemotePtrun, "remote-ptrun", "", "", V,
     "The ptrun --hosts runs on each host (default: this ptrun's own path)"},
    {Option::Export, "export", "", "", V,
     "With --hosts/--hostfile: also pass these variables of this environment to every host: "
     "VAR,VAR,... (PET_* and ./.ptrun_env always go)"},
    {Option::FromLauncher, "from-launcher", "", "", V,
     "Set by --hosts on the ptrun it starts on host HOST: name this node HOST, and stop "
     "everything when stdin (the launching ptrun's pipe) closes"},
    {Option::Explain, "explain", "", "", F,
     "Print the resolved topology and where each value came from; launch nothing"},
}};

// The words of the options whose values are words (OptionSpec::words). Each parser accepts every
// word listed for its option and names them all when it refuses a value (option_words_test.cpp).
constexpr std::array<std::string_view, 6> kNprocWords{"auto", "cpu", "gpu", "xpu", "hpu", "npu"};
constexpr std::array<std::string_view, 4> kRdzvBackends{"static", "c10d", "etcd-v2", "etcd"};
constexpr std::array<std::string_view, 2> kRestartPolicies{"group", "failed"};
constexpr std::array<std::string_view, 3> kStartMethods{"spawn", "fork", "forkserver"};
constexpr std::array<std::string_view, 1> kEventLogHandlers{"null"};
constexpr std::array<std::string_view, 4> kStdStreams{"0", "1", "2", "3"};
constexpr std::array<std::string_view, 4> kSlurmModes{"auto", "per-node", "per-rank", "off"};
constexpr std::array<std::string_view, 8> kLauncherEnvs{"auto", "slurm", "mpi", "flux",
                                                        "pbs",  "lsf",   "k8s", "off"};
constexpr std::array<std::string_view, 4> kNumaBindings{"node", "socket", "exclusive",
                                                        "core-complex"};

constexpr std::array<std::pair<Option, std::span<const std::string_view>>, 10> kValueWords{{
    {Option::NprocPerNode, kNprocWords},
    {Option::RestartPolicy, kRestartPolicies},
    {Option::RdzvBackend, kRdzvBackends},
    {Option::StartMethod, kStartMethods},
    {Option::EventLogHandler, kEventLogHandlers},
    {Option::Redirects, kStdStreams},
    {Option::Tee, kStdStreams},
    {Option::SlurmMode, kSlurmModes},
    {Option::LauncherEnv, kLauncherEnvs},
    {Option::NumaBinding, kNumaBindings},
}};

/// The options whose value is a directory (completed with directory names).
constexpr std::array<Option, 1> kDirectoryOptions{Option::LogDir};

constexpr std::span<const std::string_view> words_of(Option key) {
    for (const auto& [option, words] : kValueWords) {
        if (option == key) return words;
    }
    return {};
}

constexpr ValueHint hint_of(Option key) {
    for (auto option : kDirectoryOptions) {
        if (option == key) return ValueHint::Directory;
    }
    return ValueHint::Text;
}

/// torchrun's variables beyond PET_*, each the fallback of one option.
constexpr std::array<std::pair<Option, std::string_view>, 3> kTorchEnvFallbacks{{
    {Option::ShutdownTimeout, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"},
    {Option::HealthPort, "TORCHELASTIC_HEALTH_CHECK_PORT"},
    {Option::LogLinePrefixTemplate, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"},
}};

/// Room for the longest PET_ spelling (names_fit checks it).
constexpr std::size_t kMaxName = 32;

constexpr std::string_view kPetPrefix = "PET_";

constexpr bool names_fit() {
    for (const auto& row : kRows) {
        if (kPetPrefix.size() + row.dashed.size() > kMaxName) return false;
    }
    return true;
}
static_assert(names_fit(), "kMaxName: a dashed name is too long for its PET_ spelling");

/// The spellings derived from one dashed name, stored here so that OptionSpec can view them.
struct DerivedNames {
    std::array<char, kMaxName> underscored{};  ///< "nproc_per_node"
    std::array<char, kMaxName> pet{};          ///< "PET_NPROC_PER_NODE"
};

constexpr char underscored_char(char c) { return c == '-' ? '_' : c; }

constexpr char upper_char(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

constexpr std::array<DerivedNames, kOptionCount> kDerived = [] {
    std::array<DerivedNames, kOptionCount> out{};
    for (std::size_t i = 0; i < kRows.size(); ++i) {
        const auto name = kRows[i].dashed;
        for (std::size_t j = 0; j < kPetPrefix.size(); ++j) out[i].pet[j] = kPetPrefix[j];
        for (std::size_t j = 0; j < name.size(); ++j) {
            out[i].underscored[j] = underscored_char(name[j]);
            out[i].pet[kPetPrefix.size() + j] = upper_char(underscored_char(name[j]));
        }
    }
    return out;
}();

/// The table's rows with their underscored and PET_ spellings derived from the dashed name.
constexpr std::array<OptionSpec, kOptionCount> kTable = [] {
    std::array<OptionSpec, kOptionCount> out{};
    for (std::size_t i = 0; i < kRows.size(); ++i) {
        const Row& r = kRows[i];
        out[i] = OptionSpec{r.key,
                            r.dashed,
                            {kDerived[i].underscored.data(), r.dashed.size()},
                            {kDerived[i].pet.data(), kPetPrefix.size() + r.dashed.size()},
                            r.short_name,
                            r.fallback,
                            r.kind,
                            r.help,
                            words_of(r.key),
                            hint_of(r.key)};
    }
    return out;
}();

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

namespace ptrun::launcher {
namespace {

/// Levenshtein distance between `a` and `b` (short strings: one row of the table).
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<std::string> closest_option(std::string_view given) {
    std::string_view name = given;
    while (!name.empty() && name.front() == '-') name.remove_prefix(1);
    if (auto eq = name.find('='); eq != std::string_view::npos) name = name.substr(0, eq);
    if (name.size() < 2) return std::nullopt;
    const OptionSpec* best = nullptr;
    std::size_t best_distance = name.size() > 12 ? 3 : 2;
    std::size_t prefixed = 0;
    const OptionSpec* prefix_of = nullptr;
    for (const auto& spec : option_table()) {
        for (std::string_view spelling : {spec.dashed, spec.underscored}) {
            const std::size_t d = edit_distance(name, spelling);
            if (d < best_distance || (d == best_distance && best == nullptr)) {
                best = &spec;
                best_distance = d;
            }
            if (spelling.substr(0, name.size()) == name && prefix_of != &spec) {
                prefix_of = &spec;
                ++prefixed;
            }
        }
    }
    if (best != nullptr) return "--" + std::string(best->dashed);
    if (prefixed == 1) return "--" + std::string(prefix_of->dashed);
    return std::nullopt;
}

std::string_view torch_env_fallback(Option key) {
    for (const auto& [option, name] : kTorchEnvFallbacks) {
        if (option == key) return name;
    }
    return {};
}

}  // namespace ptrun::launcher
