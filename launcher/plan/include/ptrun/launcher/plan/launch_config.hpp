#pragma once
/// The validated, typed launch: what every later stage of ptrun works from.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/env/device_kind.hpp"
#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/etcd_settings.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/launcher/cli/node_range.hpp"
#include "ptrun/launcher/cli/rdzv_backend.hpp"
#include "ptrun/launcher/cli/rdzv_conf.hpp"
#include "ptrun/launcher/cli/rdzv_settings.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/std_streams.hpp"
#include "ptrun/launcher/output/line_prefix_template.hpp"
#include "ptrun/placement/accelerators.hpp"
#include "ptrun/placement/binding_plan.hpp"

namespace ptrun::launcher {

/// --restart-policy: every worker (torchrun's way) or the failed ones alone.
enum class RestartPolicyKind { Group, Failed };

/// One kind of accelerator found on this node, and which of its devices ptrun's environment shows.
struct HostDevices {
    placement::FoundDevices found;         ///< AMD: those ROCR_VISIBLE_DEVICES leaves, renumbered
    std::vector<env::CudaDevice> visible;  ///< env::visible_devices of the kind
};

/// Facts about this machine that `resolve` needs; `main` gathers them, tests make them up.
struct HostFacts {
    std::string hostname = "localhost";
    int cpu_count = 1;
    /// The GPUs ptrun's own environment shows, in the runtime's order (host_facts.hpp): NVIDIA's
    /// (CUDA_VISIBLE_DEVICES) unless only AMD GPUs are found (gpu_kind).
    std::vector<env::CudaDevice> gpus;
    env::DeviceKind gpu_kind = env::DeviceKind::NvidiaGpu;  ///< what `gpus` and `gpu` count
    /// Every kind of accelerator found (placement::find_accelerators), in `auto`'s order.
    std::vector<HostDevices> accelerators;
    std::filesystem::path device_root = "/";  ///< where they were looked for (PTRUN_DEVICE_ROOT)
    std::string random_id = "00000000";       ///< fresh per launch; the run id of --standalone
    /// False when the files the options name are another host's (any_host_facts): not read.
    bool local_files = true;
};

/// The devices of `kind` ptrun's environment shows: `gpus` for gpu_kind, else the accelerator's
/// visible devices, else none.
std::vector<env::CudaDevice> host_devices(const HostFacts& host, env::DeviceKind kind);

struct LaunchConfig {
    NodeRange nnodes;
    int nproc_per_node = 1;
    bool standalone = false;
    RdzvBackend rdzv_backend = RdzvBackend::Static;
    /// The SLURM mode in use, as apply_slurm_defaults recorded it (off, per-node or per-rank;
    /// auto only when the options did not pass through it).
    SlurmMode slurm_mode = SlurmMode::Auto;
    std::string rdzv_endpoint;
    std::string run_id = "none";
    RdzvConf rdzv_conf;
    RdzvSettings rdzv;  ///< rdzv_conf's timeouts and switches
    /// --rdzv-backend etcd-v2: the members --rdzv-endpoint lists and rdzv_conf's TLS keys;
    /// empty with the other backends.
    EtcdSettings etcd;
    int node_rank = 0;
    bool node_rank_given = false;  ///< --node-rank (or PET_NODE_RANK) was given
    /// Multi-node: the rendezvous store every agent meets at (the c10d endpoint, or static's
    /// master address and port); empty host for a single-node job and for etcd-v2 (the agents
    /// meet in etcd, `etcd`).
    HostPort rendezvous_store;
    /// --rdzv-conf store_type=file: the file the agents meet in (--rdzv-endpoint PATH); empty
    /// otherwise.
    std::string rdzv_file;
    std::string master_addr = "127.0.0.1";
    std::optional<std::uint16_t> master_port;  ///< nullopt: ptrun picks a free port
    std::string local_addr;
    int max_restarts = 0;
    /// --restart-policy: what a worker's failure restarts.
    RestartPolicyKind restart_policy = RestartPolicyKind::Group;
    /// --recovery-timeout: how long the survivors have to join a replacement's generation.
    std::chrono::milliseconds recovery_timeout{60'000};
    std::string role = "default";
    std::string log_dir;  ///< empty: a temporary directory
    StdSpec redirects;
    StdSpec tee;
    std::optional<std::set<int>> local_ranks_filter;
    /// --log-line-prefix-template (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE): the prefix of tee'd
    /// and filtered lines; nullopt (unset or empty): ptrun's "[host:rank] ".
    std::optional<LinePrefixTemplate> log_line_prefix;
    /// --duplicate-stdout-filters / --duplicate-stderr-filters: worker lines holding any of these
    /// are also copied to attempt_N/filtered_stdout.log / filtered_stderr.log.
    std::vector<std::string> stdout_filters;
    std::vector<std::string> stderr_filters;
    /// The kind of device the workers use: HostFacts::gpu_kind, or what --nproc-per-node xpu,
    /// hpu, npu (or KIND:LIST, or auto) chose; its variable is the one ptrun sets.
    env::DeviceKind device_kind = env::DeviceKind::NvidiaGpu;
    /// --nproc-per-node gpu:LIST (xpu:LIST, ...): the devices the workers use, in order (one
    /// worker each); empty otherwise (the workers inherit the visibility variable untouched).
    std::vector<env::CudaDevice> gpu_selection;
    bool virtual_local_rank = false;  ///< LOCAL_RANK=0, each worker sees only its own device
    std::optional<placement::BindingMode> numa_binding;
    bool report_bindings = false;
    /// --memory-limit-per-worker: bytes each worker's own memory cgroup allows; nullopt: none.
    std::optional<std::uint64_t> memory_limit_per_worker;
    std::chrono::milliseconds shutdown_timeout{30'000};
    /// PTRUN_STRAGGLER_NOTICE: after how long a group whose other workers exited 0 says which
    /// still run (set by `resolve_launch` from the environment).
    std::chrono::seconds straggler_notice{300};
    /// PTRUN_READY_DEADLINE: how long after the first rank's first progress the ready line waits
    /// for the others before it names those missing (set by `resolve_launch`).
    std::chrono::seconds ready_deadline{120};
    std::vector<int> signals_to_handle;
    /// --checkpoint-signal: on it (or SIGTERM) the workers get it and --checkpoint-grace to exit
    /// on their own before they are stopped; 0: none (SIGTERM stops them at once, as torchrun).
    int checkpoint_signal = 0;
    std::chrono::milliseconds checkpoint_grace{60'000};
    /// --requeue (SLURM only): node rank 0 requeues the job once its workers, and on several
    /// nodes every node's, have exited on the checkpoint signal (agent/requeue_wait.hpp).
    bool requeue = false;
    /// --store-relay: each agent serves its workers' store connections and relays them to the
    /// workers' store over a few connections (workers see MASTER_ADDR=127.0.0.1).
    bool store_relay = false;
    /// --hang-timeout: a worker silent this long after its first beat is hung; nullopt: off.
    std::optional<std::chrono::milliseconds> hang_timeout;
    /// --health-port: serve /health and /status there (0: any free port); nullopt: no endpoint.
    std::optional<std::uint16_t> health_port;
    std::string health_addr = "127.0.0.1";  ///< --health-addr: a numeric IPv4 or IPv6 address
    bool explain = false;
    bool module = false;
    bool no_python = false;
    bool no_runner = false;  ///< --no-runner: Python workers run as plain python3 -u
    /// --preload: modules a per-node zygote imports once; workers are forked from it. Empty: off.
    std::vector<std::string> preload;
    std::string hostname;
    std::string program;
    std::vector<std::string> program_args;

    /// True when the job spans (or may span) several nodes and needs the rendezvous; always
    /// with etcd-v2 and a rendezvous file, which the user asked for even with --nnodes 1.
    bool multi_node() const {
        return nnodes.max > 1 || rdzv_backend == RdzvBackend::Etcd || !rdzv_file.empty();
    }
};

/// Validates `opts` into a LaunchConfig; throws UsageError naming the value and what was expected.
LaunchConfig resolve(const LaunchOptions& opts, const HostFacts& host);

/// About how many file descriptors ptrun needs for this job at most: its own few; per local
/// worker two log files, two tee pipes and two store connections; on a multi-node store host
/// every agent's session and every worker's store connections.
int open_files_needed(const LaunchConfig& config);

}  // namespace ptrun::launcher
