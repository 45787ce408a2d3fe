#include "ptrun/launcher/plan/launch_config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <limits>

#include "ptrun/launcher/cli/memory_size.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/output_filters.hpp"
#include "ptrun/launcher/process/exit_status.hpp"

namespace ptrun::launcher {
namespace {

std::int64_t integer(const LaunchOptions& o, Option key, std::int64_t min, std::int64_t max) {
    const auto& raw = o.at(key);
    auto v = env::parse_int(raw.value);
    if (!v || *v < min || *v > max) {
        throw UsageError(as_given(key, raw) + ": expected an integer from " + std::to_string(min) +
                         " to " + std::to_string(max));
    }
    return *v;
}

/// `parse(value of key)`; a UsageError it throws for a value from a PET_ variable names the
/// variable ("... (from PET_NNODES)"), as as_given does for the messages written here.
template <typename Parse>
auto parsed(const LaunchOptions& o, Option key, Parse parse) {
    const auto& raw = o.at(key);
    try {
        return parse(raw.value);
    } catch (const UsageError& e) {
        if (raw.source != Source::PetEnv || raw.origin.empty()) throw;
        throw UsageError(std::string(e.what()) + " (from " + raw.origin + ")");
    }
}

double seconds(const LaunchOptions& o, Option key, bool allow_zero) {
    const auto& raw = o.at(key);
    auto v = env::parse_seconds(raw.value);
    if (!v || (!allow_zero && *v == 0)) {
        throw UsageError(as_given(key, raw) + ": expected a " +
                         (allow_zero ? "non-negative" : "positive") + " number of seconds");
    }
    return *v;
}

/// --nproc-per-node KIND:LIST: the devices picked from the ones this node shows, in order.
std::vector<env::CudaDevice> gpu_selection(const RawValue& raw, const HostFacts& host,
                                           env::DeviceKind kind) {
    try {
        auto picked = env::parse_gpu_selection(std::string_view(raw.value).substr(4));
        return env::select_devices(host_devices(host, kind), picked);
    } catch (const env::ParseError& e) {
        throw UsageError(as_given(Option::NprocPerNode, raw) + ": " + e.what());
    }
}

/// The kind torch's name `name` means on this host ("gpu": NVIDIA or AMD, the one found).
std::optional<env::DeviceKind> kind_named(std::string_view name, const HostFacts& host) {
    if (name == "gpu") return host.gpu_kind;
    for (auto kind :
         {env::DeviceKind::IntelGpu, env::DeviceKind::Gaudi, env::DeviceKind::AscendNpu}) {
        if (name == env::torch_name(kind)) return kind;
    }
    return std::nullopt;
}

/// "no Intel GPU found on this node (ptrun looks in /sys/class/drm ...)", or which variable hid
/// them all.
std::string none_found(env::DeviceKind kind, const HostFacts& host) {
    std::string noun(env::device_noun(kind));
    for (const auto& a : host.accelerators) {
        if (a.found.kind != kind) continue;
        return std::to_string(a.found.devices.size()) + " " + noun + "(s) found in " +
               a.found.source + ", but ptrun's environment shows none of them (" +
               std::string(env::visibility_variable(kind)) + ")";
    }
    if (kind == env::DeviceKind::NvidiaGpu) return "no GPU found on this node";
    return "no " + noun + " found on this node (ptrun looks in " +
           std::string(placement::where_looked(kind)) + ")";
}

int nproc(LaunchConfig& c, const LaunchOptions& o, const HostFacts& host) {
    const auto& raw = o.at(Option::NprocPerNode);
    const int gpus = static_cast<int>(host.gpus.size());
    c.device_kind = host.gpu_kind;
    if (raw.value == "cpu") return host.cpu_count;
    if (raw.value == "auto") {
        // torchrun: torch.accelerator's device count when one is available, else the CPUs.
        if (gpus > 0) return gpus;
        for (const auto& a : host.accelerators) {
            if (a.visible.empty() || a.found.kind == env::DeviceKind::NvidiaGpu ||
                a.found.kind == env::DeviceKind::AmdGpu)
                continue;
            c.device_kind = a.found.kind;
            return static_cast<int>(a.visible.size());
        }
        return host.cpu_count;
    }
    const auto colon = raw.value.find(':');
    if (auto kind = kind_named(std::string_view(raw.value).substr(0, colon), host)) {
        c.device_kind = *kind;
        if (colon != std::string::npos) {
            c.gpu_selection = gpu_selection(raw, host, *kind);
            return static_cast<int>(c.gpu_selection.size());
        }
        const int n = static_cast<int>(host_devices(host, *kind).size());
        if (n == 0)
            throw UsageError(as_given(Option::NprocPerNode, raw) + ": " + none_found(*kind, host));
        return n;
    }
    auto v = env::parse_int(raw.value);
    if (!v || *v < 1 || *v > 4096) {
        throw UsageError(as_given(Option::NprocPerNode, raw) +
                         ": expected a positive integer (up to 4096), auto, cpu, gpu, xpu, hpu, "
                         "npu or one of those with :LIST (device indexes like gpu:1,3,5)");
    }
    return static_cast<int>(*v);
}

/// --virtual-local-rank, --numa-binding, --report-bindings and the output filters.
void resolve_placement(LaunchConfig& c, const LaunchOptions& o, const HostFacts& host) {
    c.virtual_local_rank = o.flag(Option::VirtualLocalRank);
    const auto devices =
        c.gpu_selection.empty() ? host_devices(host, c.device_kind) : c.gpu_selection;
    if (c.virtual_local_rank && !devices.empty() &&
        devices.size() < static_cast<std::size_t>(c.nproc_per_node)) {
        throw UsageError("--virtual-local-rank with " + std::to_string(c.nproc_per_node) +
                         " workers: expected a device for each, but this node shows " +
                         std::to_string(devices.size()) + " (" +
                         std::string(env::visibility_variable(c.device_kind)) + " " +
                         env::cuda_visible_devices_value(devices) + ")");
    }
    const auto& binding = o.at(Option::NumaBinding);
    if (!binding.value.empty()) {
        c.numa_binding = placement::parse_binding_mode(binding.value);
        if (!c.numa_binding) {
            throw UsageError(as_given(Option::NumaBinding, binding) +
                             ": expected node, socket, exclusive or core-complex");
        }
    }
    c.report_bindings = o.flag(Option::ReportBindings);
    for (auto [key, filters] : {std::pair{Option::DuplicateStdoutFilters, &c.stdout_filters},
                                std::pair{Option::DuplicateStderrFilters, &c.stderr_filters}}) {
        *filters = parsed(o, key, [key](const std::string& v) {
            return parse_output_filters(option_name(key), v);
        });
    }
}

/// True for a Python module name: dotted identifiers (ASCII letters, digits, underscores).
bool module_name(std::string_view name) {
    bool start = true;
    for (char ch : name) {
        const bool letter = std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
        if (ch == '.') {
            if (start) return false;
            start = true;
        } else if (letter || (!start && std::isdigit(static_cast<unsigned char>(ch)))) {
            start = false;
        } else {
            return false;
        }
    }
    return !start;
}

std::vector<std::string> preload_modules(const RawValue& raw) {
    std::vector<std::string> out;
    if (raw.value.empty()) return out;
    std::string_view rest = raw.value;
    while (true) {
        auto comma = rest.find(',');
        std::string name(rest.substr(0, comma));
        if (!module_name(name)) {
            throw UsageError(as_given(Option::Preload, raw) + ": '" + name +
                             "' is not a Python module name (expected comma-separated module "
                             "names, e.g. torch,numpy)");
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return out;
}

std::vector<int> signal_list(const LaunchOptions& o) {
    const auto& raw = o.at(Option::SignalsToHandle);
    std::vector<int> out;
    std::string_view rest = raw.value;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string name(rest.substr(0, comma));
        int signo = signal_number(name);
        // Job control's own signals are ptrun's to handle (terminal.hpp), never the job's.
        if (signo == 0 || signo == SIGKILL || signo == SIGSTOP || signo == SIGCHLD ||
            signo == SIGCONT || signo == SIGTTIN || signo == SIGTTOU) {
            throw UsageError(as_given(Option::SignalsToHandle, raw) + ": '" + name +
                             "' is not a signal ptrun can forward (e.g. SIGTERM,SIGUSR1)");
        }
        out.push_back(signo);
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return out;
}

/// --checkpoint-signal, --checkpoint-grace, --requeue; ptrun handles the checkpoint signal and
/// SIGTERM whatever --signals-to-handle says.
void resolve_checkpoint(LaunchConfig& c, const LaunchOptions& o) {
    c.checkpoint_grace = std::chrono::milliseconds(
        static_cast<std::int64_t>(seconds(o, Option::CheckpointGrace, true) * 1000.0));
    c.requeue = o.flag(Option::Requeue);
    c.store_relay = o.flag(Option::StoreRelay);
    if (c.requeue && c.slurm_mode != SlurmMode::PerNode && c.slurm_mode != SlurmMode::PerRank) {
        const auto& mode = o.at(Option::SlurmMode);
        const std::string why =
            mode.origin.empty()
                ? "ptrun does not run in a SLURM task (--slurm-mode " + mode.value + ")"
                : mode.origin;
        throw UsageError(
            "--requeue: expected a SLURM job (the job is requeued with scontrol "
            "requeue $SLURM_JOB_ID), but " +
            why +
            "; elsewhere the scheduler restarts the job (e.g. a Kubernetes "
            "Job's backoffLimit)");
    }
    const auto& raw = o.at(Option::CheckpointSignal);
    if (raw.value.empty()) {
        if (c.requeue) {
            throw UsageError(
                "--requeue without --checkpoint-signal: expected a signal the workers "
                "checkpoint on (e.g. --checkpoint-signal SIGUSR1): the job is requeued once "
                "they exited on it");
        }
        return;
    }
    const int signo = signal_number(raw.value);
    if (signo == 0 || signo == SIGKILL || signo == SIGSTOP || signo == SIGCHLD ||
        signo == SIGCONT || signo == SIGTTIN || signo == SIGTTOU) {
        throw UsageError(as_given(Option::CheckpointSignal, raw) +
                         ": expected a signal the workers can catch (e.g. SIGUSR1 or USR1)");
    }
    c.checkpoint_signal = signo;
    for (int s : {signo, static_cast<int>(SIGTERM)}) {
        if (std::find(c.signals_to_handle.begin(), c.signals_to_handle.end(), s) ==
            c.signals_to_handle.end())
            c.signals_to_handle.push_back(s);
    }
}

/// --local-ranks-filter: local ranks that exist on this node (a missing one would hide its
/// output without a word).
std::set<int> rank_filter(const RawValue& raw, int nproc) {
    std::set<int> out;
    std::string_view rest = raw.value;
    while (true) {
        auto comma = rest.find(',');
        auto v = env::parse_int(rest.substr(0, comma));
        if (!v || *v < 0 || *v > 4096) {
            throw UsageError(as_given(Option::LocalRanksFilter, raw) +
                             ": expected local ranks like 0,1,3");
        }
        if (*v >= nproc) {
            throw UsageError(as_given(Option::LocalRanksFilter, raw) + ": local rank " +
                             std::to_string(*v) + " does not exist: this node runs " +
                             std::to_string(nproc) + " worker(s), local ranks " +
                             (nproc == 1 ? std::string("0") : "0-" + std::to_string(nproc - 1)));
        }
        out.insert(static_cast<int>(*v));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return out;
}

/// True for a numeric IPv4 or IPv6 address (what the health endpoint can listen on).
bool valid_numeric_address(const std::string& text) {
    unsigned char buf[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, text.c_str(), buf) == 1 ||
           ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

void check_backend(LaunchConfig& c, const LaunchOptions& o) {
    const auto& raw = o.at(Option::RdzvBackend);
    c.rdzv_backend = parse_rdzv_backend(raw);
    // An endpoint without a backend means the c10d rendezvous (torchrun would silently use static).
    if (!o.given(Option::RdzvBackend) && !o.at(Option::RdzvEndpoint).value.empty())
        c.rdzv_backend = RdzvBackend::C10d;
}

constexpr std::uint16_t kDefaultRdzvPort = 29400;    // torchrun's c10d default
constexpr std::uint16_t kDefaultMasterPort = 29500;  // torchrun's static default

/// Where the store lives (one node: the c10d endpoint's port; several: where the agents meet), and
/// what must hold for the nodes to agree.
void resolve_rendezvous(LaunchConfig& c, const LaunchOptions& o) {
    if (!c.multi_node()) {
        if (c.node_rank != 0) {
            throw UsageError("--node-rank " + std::to_string(c.node_rank) +
                             ": a single-node job (--nnodes 1) is node rank 0");
        }
        // One node with c10d: the endpoint's port (when given and not 0) becomes the store's port.
        if (!c.master_port && c.rdzv_backend == RdzvBackend::C10d && !c.rdzv_endpoint.empty()) {
            auto port = parsed(o, Option::RdzvEndpoint, [](const std::string& v) {
                            return parse_endpoint(v, 0, option_name(Option::RdzvEndpoint));
                        }).port;
            if (port != 0) c.master_port = port;
        }
        return;
    }
    if (c.node_rank_given && c.node_rank >= c.nnodes.max) {
        throw UsageError("--node-rank " + std::to_string(c.node_rank) +
                         ": expected a node rank below --nnodes " + o.at(Option::Nnodes).value);
    }
    if (c.rdzv_backend == RdzvBackend::Static) {
        if (c.nnodes.min != c.nnodes.max) {
            throw UsageError(
                "--nnodes " + o.at(Option::Nnodes).value +
                " with --rdzv-backend static: expected a fixed node count (use c10d for MIN:MAX)");
        }
        c.rendezvous_store = HostPort{c.master_addr, c.master_port.value_or(kDefaultMasterPort)};
        if (c.rendezvous_store.port == 0) {
            throw UsageError(
                "--master-port 0: a multi-node job needs a fixed port every node agrees on");
        }
        c.node_rank_given = true;  // static: --node-rank (default 0) is the group rank
        if (!c.rdzv.is_host) c.rdzv.is_host = c.node_rank == 0;
        c.master_port = c.rendezvous_store.port;
        return;
    }
    if (c.rdzv_backend == RdzvBackend::Etcd) return;  // the agents meet in etcd (resolve_etcd)
    if (!c.rdzv_file.empty()) return;                 // in a file (resolve_file_store)
    if (c.rdzv_endpoint.empty()) {
        throw UsageError(
            "--rdzv-endpoint '': a multi-node c10d rendezvous needs HOST[:PORT] of the node "
            "hosting "
            "the store (e.g. --rdzv-endpoint node1:29400)");
    }
    c.rendezvous_store = parsed(o, Option::RdzvEndpoint, [](const std::string& v) {
        return parse_endpoint(v, kDefaultRdzvPort, option_name(Option::RdzvEndpoint));
    });
    if (c.rendezvous_store.port == 0) {
        throw UsageError("--rdzv-endpoint '" + c.rdzv_endpoint +
                         "': a multi-node job needs a fixed port every node agrees on");
    }
    c.master_port = c.rendezvous_store.port;
}

/// `e`'s message, naming the PET_ variable `key`'s value came from when it starts with `key`'s
/// flag (etcd_settings's messages name either --rdzv-endpoint or --rdzv-conf).
UsageError with_origin(const UsageError& e, const LaunchOptions& o) {
    std::string what = e.what();
    for (auto key : {Option::RdzvEndpoint, Option::RdzvConf}) {
        const auto& raw = o.at(key);
        if (what.rfind(flag_text(key) + " ", 0) != 0) continue;
        if (raw.source == Source::PetEnv && !raw.origin.empty())
            what += " (from " + raw.origin + ")";
        break;
    }
    return UsageError(what);
}

/// --rdzv-backend etcd-v2: the members and how to reach them. The etcd keys of --rdzv-conf are
/// refused with the backend `given` otherwise (they would be ignored); --standalone overrides
/// etcd like the other backends, and then nothing of etcd is read. The TLS files are checked
/// only when they are `local_files` (HostFacts::local_files).
void resolve_etcd(LaunchConfig& c, const LaunchOptions& o, RdzvBackend given, bool local_files) {
    if (given != RdzvBackend::Etcd) {
        for (const auto& [key, value] : c.rdzv_conf) {
            if (!is_etcd_conf_key(key)) continue;
            const std::string why = ": only applies to --rdzv-backend etcd-v2 (the backend is ";
            throw with_origin(UsageError("--rdzv-conf " + key + "=" + value + why +
                                         std::string(backend_name(given)) + ")"),
                              o);
        }
        return;
    }
    if (c.rdzv_backend != RdzvBackend::Etcd) return;  // --standalone
    if (c.rdzv.is_host) {
        throw with_origin(UsageError("--rdzv-conf is_host=" + c.rdzv_conf.find("is_host")->second +
                                     ": etcd-v2 elects the coordinator among the agents (no node "
                                     "hosts the store); drop is_host"),
                          o);
    }
    if (c.rdzv_endpoint.empty()) {
        throw UsageError(
            "--rdzv-backend etcd-v2 needs --rdzv-endpoint naming the etcd members (e.g. "
            "--rdzv-endpoint etcd1:2379,etcd2:2379,etcd3:2379)");
    }
    try {
        c.etcd = etcd_settings(c.rdzv_endpoint, c.rdzv_conf, local_files);
    } catch (const UsageError& e) {
        throw with_origin(e, o);
    }
}

/// --rdzv-conf store_type=file: the c10d rendezvous meets in the file --rdzv-endpoint names.
/// Refused with the other backends; --standalone overrides it as it overrides the endpoint.
void resolve_file_store(LaunchConfig& c, const LaunchOptions& o) {
    if (!c.rdzv.file_store || c.standalone) return;
    const std::string item = "--rdzv-conf store_type=" + c.rdzv_conf.find("store_type")->second;
    if (c.rdzv_backend != RdzvBackend::C10d) {
        throw with_origin(
            UsageError(item + ": only applies to --rdzv-backend c10d (the backend is " +
                       std::string(backend_name(c.rdzv_backend)) + ")"),
            o);
    }
    if (c.rdzv.is_host) {
        throw with_origin(
            UsageError("--rdzv-conf is_host=" + c.rdzv_conf.find("is_host")->second +
                       " with store_type=file: no node hosts the rendezvous (the agents meet in "
                       "the file and elect a coordinator); drop is_host"),
            o);
    }
    if (c.rdzv_endpoint.empty()) {
        if (c.nnodes.max > 1) {
            throw UsageError(item +
                             " needs --rdzv-endpoint PATH: a file on a file system every node "
                             "shares (e.g. --rdzv-endpoint /shared/jobs/rdzv)");
        }
        return;  // one node, as torchrun's temporary file: nothing to share, the local store
    }
    c.rdzv_file = c.rdzv_endpoint;
}

}  // namespace

LaunchConfig resolve(const LaunchOptions& o, const HostFacts& host) {
    LaunchConfig c;
    c.hostname = host.hostname;
    c.explain = o.flag(Option::Explain);
    c.standalone = o.flag(Option::Standalone);
    c.nnodes = parsed(o, Option::Nnodes, [](const std::string& v) { return parse_node_range(v); });
    c.nproc_per_node = nproc(c, o, host);
    check_backend(c, o);
    const RdzvBackend given_backend = c.rdzv_backend;
    c.slurm_mode = parse_slurm_mode(o.at(Option::SlurmMode));
    c.rdzv_endpoint = o.at(Option::RdzvEndpoint).value;
    c.rdzv_conf =
        parsed(o, Option::RdzvConf, [](const std::string& v) { return parse_rdzv_conf(v); });
    c.rdzv = parsed(o, Option::RdzvConf,
                    [&c](const std::string&) { return rdzv_settings(c.rdzv_conf); });
    c.node_rank = static_cast<int>(integer(o, Option::NodeRank, 0, 1'000'000));
    c.node_rank_given = o.given(Option::NodeRank);
    c.master_addr = o.at(Option::MasterAddr).value;
    if (c.master_addr.empty())
        throw UsageError("--master-addr '': expected a host name or address");
    if (!o.at(Option::MasterPort).value.empty()) {
        c.master_port = static_cast<std::uint16_t>(integer(o, Option::MasterPort, 0, 65535));
    }
    c.local_addr = o.at(Option::LocalAddr).value;
    c.max_restarts = static_cast<int>(integer(o, Option::MaxRestarts, 0, 1'000'000));
    const auto& policy = o.at(Option::RestartPolicy);
    if (policy.value == "failed") {
        c.restart_policy = RestartPolicyKind::Failed;
    } else if (policy.value != "group") {
        throw UsageError(as_given(Option::RestartPolicy, policy) + ": expected group or failed");
    }
    c.recovery_timeout = std::chrono::milliseconds(
        static_cast<std::int64_t>(seconds(o, Option::RecoveryTimeout, false) * 1000.0));
    (void)seconds(o, Option::MonitorInterval, false);
    const auto& start = o.at(Option::StartMethod);
    if (start.value != "spawn" && start.value != "fork" && start.value != "forkserver") {
        throw UsageError(as_given(Option::StartMethod, start) +
                         ": expected spawn, fork or forkserver");
    }
    c.role = o.at(Option::Role).value;
    if (c.role.empty()) throw UsageError("--role '': expected a role name");
    c.module = o.flag(Option::Module);
    c.no_python = o.flag(Option::NoPython);
    c.no_runner = o.flag(Option::NoRunner);
    c.preload = preload_modules(o.at(Option::Preload));
    (void)o.flag(Option::RunPath);
    if (const auto& specs = o.at(Option::LogsSpecs); !specs.value.empty()) {
        throw UsageError(as_given(Option::LogsSpecs, specs) +
                         ": names a Python entry point (group torchrun.logs_specs) that lays out "
                         "torchrun's log files; ptrun loads no Python plug-in: its logs are laid "
                         "out by --log-dir, --redirects and --tee (man ptrun, LOGS)");
    }
    if (const auto& handler = o.at(Option::EventLogHandler); handler.value != "null") {
        throw UsageError(as_given(Option::EventLogHandler, handler) +
                         ": names a handler of torch's elastic events (a Python entry point); "
                         "ptrun loads no Python plug-in and accepts only null, the default");
    }
    if (c.module && c.no_python) {
        throw UsageError(
            "--module and --no-python: expected at most one of them (a module needs python3)");
    }
    c.log_dir = o.at(Option::LogDir).value;
    for (auto [key, spec] :
         {std::pair{Option::Redirects, &c.redirects}, std::pair{Option::Tee, &c.tee}}) {
        *spec = parsed(o, key,
                       [key](const std::string& v) { return parse_std_spec(v, flag_text(key)); });
    }
    if (!o.at(Option::LocalRanksFilter).value.empty()) {
        c.local_ranks_filter = rank_filter(o.at(Option::LocalRanksFilter), c.nproc_per_node);
    }
    if (const auto& raw = o.at(Option::LogLinePrefixTemplate); !raw.value.empty()) {
        try {
            c.log_line_prefix = LinePrefixTemplate::parse(raw.value);
        } catch (const UsageError& e) {
            throw UsageError(as_given(Option::LogLinePrefixTemplate, raw) + ": " + e.what());
        }
    }
    c.shutdown_timeout = std::chrono::milliseconds(
        static_cast<std::int64_t>(seconds(o, Option::ShutdownTimeout, true) * 1000.0));
    if (const auto& raw = o.at(Option::MemoryLimitPerWorker); !raw.value.empty()) {
        c.memory_limit_per_worker = parse_memory_size(raw.value);
        if (!c.memory_limit_per_worker) {
            throw UsageError(as_given(Option::MemoryLimitPerWorker, raw) +
                             ": expected a size: a number and an optional unit K, M, G or T "
                             "(binary: 1K = 1024 bytes), e.g. 24G or 512M");
        }
    }
    c.signals_to_handle = signal_list(o);
    resolve_checkpoint(c, o);
    resolve_placement(c, o, host);
    if (!o.at(Option::HangTimeout).value.empty()) {
        const double hang = seconds(o, Option::HangTimeout, true);  // 0: off, as unset
        if (hang > 0) {
            c.hang_timeout = std::chrono::milliseconds(
                std::max<std::int64_t>(1, static_cast<std::int64_t>(hang * 1000.0)));
        }
    }
    if (!o.at(Option::HealthPort).value.empty()) {
        c.health_port = static_cast<std::uint16_t>(integer(o, Option::HealthPort, 0, 65535));
    }
    c.health_addr = o.at(Option::HealthAddr).value;
    if (!valid_numeric_address(c.health_addr)) {
        throw UsageError(
            as_given(Option::HealthAddr, o.at(Option::HealthAddr)) +
            ": expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)");
    }

    c.run_id = o.at(Option::RdzvId).value;
    if (c.standalone) {
        if (c.nnodes.max > 1) {
            throw UsageError("--standalone with --nnodes " + o.at(Option::Nnodes).value +
                             ": expected a single node (--nnodes 1) in standalone mode");
        }
        // etcd's members are no store endpoint: the local store takes a free port.
        if (c.rdzv_backend == RdzvBackend::Etcd) c.rdzv_endpoint.clear();
        c.rdzv_backend = RdzvBackend::C10d;
        if (!o.given(Option::RdzvId)) c.run_id = host.random_id;
        if (!o.given(Option::MasterAddr)) c.master_addr = "localhost";  // as torchrun
    }
    if (c.run_id.empty()) throw UsageError("--rdzv-id '': expected a job id");
    resolve_etcd(c, o, given_backend, host.local_files);
    resolve_file_store(c, o);
    resolve_rendezvous(c, o);
    c.program = o.program;
    c.program_args = o.program_args;
    return c;
}

int open_files_needed(const LaunchConfig& c) {
    int total = 32 + 6 * c.nproc_per_node;
    if (c.multi_node()) total += c.nnodes.max * (3 + 2 * c.nproc_per_node);
    return total;
}

}  // namespace ptrun::launcher
