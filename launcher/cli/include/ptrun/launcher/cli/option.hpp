#pragma once
/// The torchrun/ptrun options as a typed key, and the one table that gives each its spellings,
/// PET_ variable, default and help. Code names options by `Option`; the strings appear only
/// where the user sees them (argv, PET_* env, --help, --explain, error messages).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ptrun::launcher {

/// One enumerator per option, in --help order (option_table() lists them in this order).
enum class Option : std::uint8_t {
    Nnodes,
    NprocPerNode,
    Standalone,
    RdzvBackend,
    RdzvEndpoint,
    RdzvId,
    RdzvConf,
    NodeRank,
    MasterAddr,
    MasterPort,
    LocalAddr,
    MaxRestarts,
    RestartPolicy,
    RecoveryTimeout,
    MonitorInterval,
    StartMethod,
    Role,
    Module,
    NoPython,
    NoRunner,
    Preload,
    RunPath,
    LogsSpecs,
    EventLogHandler,
    LogDir,
    Redirects,
    Tee,
    LocalRanksFilter,
    LogLinePrefixTemplate,
    ShutdownTimeout,
    SignalsToHandle,
    CheckpointSignal,
    CheckpointGrace,
    Requeue,
    StoreRelay,
    SlurmMode,
    LauncherEnv,
    VirtualLocalRank,
    NumaBinding,
    ReportBindings,
    MemoryLimitPerWorker,
    DuplicateStdoutFilters,
    DuplicateStderrFilters,
    HangTimeout,
    HealthPort,
    HealthAddr,
    Hosts,
    Hostfile,
    Include,
    Exclude,
    RemoteShell,
    RemotePtrun,
    Export,
    FromLauncher,
    Explain,  // keep last: kOptionCount counts up to it
};

/// How many options there are (the enumerators run from 0 to kOptionCount - 1).
inline constexpr std::size_t kOptionCount = static_cast<std::size_t>(Option::Explain) + 1;

/// Whether an option takes a value (`--nnodes 2`) or is a switch (`--standalone`, stored as "1").
enum class OptionKind { Value, Flag };

/// What an option's value names, for shell completion: free text, or a directory (file names).
enum class ValueHint { Text, Directory };

/// One option's row of the table.
struct OptionSpec {
    Option key;
    std::string_view dashed;       ///< canonical name: "nproc-per-node"
    std::string_view underscored;  ///< torchrun's other spelling: "nproc_per_node"
    std::string_view pet;          ///< the env fallback: "PET_NPROC_PER_NODE"
    std::string_view short_name;   ///< "-m", or empty
    std::string_view fallback;     ///< torchrun's default; empty: unset
    OptionKind kind;
    std::string_view help;  ///< --help's text, without the "[env PET_...]" suffix
    /// The words the value may be: the whole set where it is closed (--rdzv-backend's static,
    /// c10d, etcd-v2, etcd), the named values beside numbers where not (--nproc-per-node's auto,
    /// cpu, gpu); empty for free values. Shell completion offers them; the parser accepts each.
    std::span<const std::string_view> words;
    ValueHint hint = ValueHint::Text;
};

/// Every option, one row each, in enumerator order: the single source of truth.
std::span<const OptionSpec> option_table();

/// The row of `key`.
const OptionSpec& option_spec(Option key);

/// torchrun's other variable for `key`, read after the PET_ one ("TORCH_ELASTIC_SHUTDOWN_TIMEOUT"
/// for --shutdown-timeout, "TORCHELASTIC_HEALTH_CHECK_PORT" for --health-port,
/// "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE" for --log-line-prefix-template); "" for none.
std::string_view torch_env_fallback(Option key);

/// The canonical dashed name of `key` ("nproc-per-node"), for messages.
std::string_view option_name(Option key);

/// How the user writes `key` on the command line: "--nproc-per-node".
std::string flag_text(Option key);

/// The option a mistyped one most likely meant ("--nproc-per-nod" -> "--nproc-per-node",
/// "--max_restart=3" -> "--max-restarts"): the closest dashed or underscored spelling by edit
/// distance, at most 2 edits (3 for names over 12 characters), or the one option the text begins;
/// nullopt when none is that close. `given` is the argument as typed, dashes and "=VALUE" included.
std::optional<std::string> closest_option(std::string_view given);

}  // namespace ptrun::launcher
