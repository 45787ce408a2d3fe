#include "ptrun/launcher/cli.hpp"

#include <CLI/CLI.hpp>
#include <array>
#include <cctype>

#include "ptrun/launcher/usage_error.hpp"
#include "ptrun/launcher/version.hpp"

namespace ptrun::launcher {
namespace {

/// One torchrun option: canonical dashed name, short alias, default, whether it takes no value.
struct OptionSpec {
    const char* name;
    const char* short_name;
    const char* fallback;
    bool is_flag;
    const char* help;
};

constexpr std::array<OptionSpec, 34> kOptions{{
    {"nnodes", "", "1:1", false, "Number of nodes, N or MIN:MAX"},
    {"nproc-per-node", "", "1", false,
     "Workers per node: an integer, auto, cpu, gpu, or gpu:LIST (one worker per listed device, "
     "e.g. gpu:1,3,5 or gpu:0-3; indexes into the devices CUDA_VISIBLE_DEVICES shows)"},
    {"standalone", "", "", true, "Single-node job with a local store on a free port"},
    {"rdzv-backend", "", "static", false, "Rendezvous backend: static or c10d"},
    {"rdzv-endpoint", "", "", false, "Rendezvous endpoint HOST[:PORT]"},
    {"rdzv-id", "", "none", false, "Job id shared by every node of the job"},
    {"rdzv-conf", "", "", false, "Rendezvous settings key=value,key=value"},
    {"node-rank", "", "0", false, "Rank of this node (static rendezvous)"},
    {"master-addr", "", "127.0.0.1", false, "Address of the node hosting the store"},
    {"master-port", "", "", false, "Port of the store (default: a free port held by ptrun)"},
    {"local-addr", "", "", false, "Address this node advertises"},
    {"max-restarts", "", "0", false, "Restarts of the worker group before giving up"},
    {"monitor-interval", "", "0.1", false,
     "Accepted for compatibility; supervision is event-driven"},
    {"start-method", "", "spawn", false, "Accepted for compatibility: spawn, fork or forkserver"},
    {"role", "", "default", false, "Worker role name (ROLE_NAME)"},
    {"module", "-m", "", true, "Run the program as a Python module (python3 -u -m PROGRAM)"},
    {"no-python", "", "", true, "Execute the program directly, not through python3"},
    {"run-path", "", "", true, "Accepted for compatibility; the script runs as python3 -u SCRIPT"},
    {"log-dir", "", "", false,
     "Directory for per-worker logs and error files, a directory per run: "
     "RUN-ID_HOST_TIME_RANDOM/attempt_N/LOCAL_RANK/; DIR/latest links to the newest"},
    {"redirects", "-r", "0", false, "Streams sent to log files: 0-3 or LOCAL_RANK:0-3,..."},
    {"tee", "-t", "0", false,
     "Streams sent to log files and the console: 0-3 or LOCAL_RANK:0-3,..."},
    {"local-ranks-filter", "", "", false,
     "Show console output of these local ranks only: 0,1,... (each must run on this node)"},
    {"shutdown-timeout", "", "30", false,
     "Seconds between SIGTERM and SIGKILL when stopping workers"},
    {"signals-to-handle", "", "SIGINT,SIGTERM,SIGHUP,SIGUSR1,SIGUSR2", false,
     "Signals forwarded to every worker group"},
    {"slurm-mode", "", "auto", false,
     "Inside a SLURM step: auto, per-node (ptrun spawns the node's workers), per-rank (SLURM "
     "started one task per rank; each ptrun runs one worker) or off (ignore SLURM)"},
    {"virtual-local-rank", "", "", true,
     "Every worker gets LOCAL_RANK=0 and sees only its own GPU in CUDA_VISIBLE_DEVICES"},
    {"numa-binding", "", "", false,
     "Bind each worker's CPUs and memory near its GPU: node, socket, exclusive or core-complex "
     "(inside ptrun's own CPU set)"},
    {"report-bindings", "", "", true,
     "Print one line per worker at start: rank, CPUs, memory nodes, GPUs"},
    {"duplicate-stdout-filters", "", "", false,
     "Also copy worker stdout lines containing any of these comma-separated substrings (',,' "
     "for a comma) to attempt_N/filtered_stdout.log in the run's log directory"},
    {"duplicate-stderr-filters", "", "", false,
     "As --duplicate-stdout-filters, for stderr: attempt_N/filtered_stderr.log"},
    {"hang-timeout", "", "", false,
     "Seconds without progress (heartbeats, collectives) after which a worker is hung: its "
     "stacks are captured and the group is stopped (default: off; see man ptrun, HANGS)"},
    {"health-port", "", "", false,
     "Serve HTTP GET /health and /status on this port (0: any free port, printed)"},
    {"health-addr", "", "127.0.0.1", false, "Address the health endpoint listens on"},
    {"explain", "", "", true,
     "Print the resolved topology and where each value came from; launch nothing"},
}};

std::string underscored(std::string name) {
    for (auto& c : name) {
        if (c == '-') c = '_';
    }
    return name;
}

std::string flag_names(const OptionSpec& spec) {
    std::string names;
    if (*spec.short_name) names += std::string(spec.short_name) + ",";
    names += "--" + std::string(spec.name);
    std::string alt = underscored(spec.name);
    if (alt != spec.name) names += ",--" + alt;
    return names;
}

std::string help_text(const OptionSpec& spec) {
    std::string text = spec.help;
    if (std::string(spec.name) != "explain") text += " [env " + pet_name(spec.name) + "]";
    return text;
}

/// CLI11's help with ptrun's real usage line (CLI11 would print only "ptrun [OPTIONS]").
class UsageFormatter : public CLI::Formatter {
  public:
    std::string make_usage(const CLI::App*, std::string name) const override {
        return "Usage: " + name + " [OPTIONS] PROGRAM [ARGS...]\n";
    }
};

}  // namespace

std::string pet_name(std::string_view option) {
    std::string name = "PET_";
    for (char c : option) {
        name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

std::variant<LaunchOptions, InfoRequest> parse_command_line(const std::vector<std::string>& args,
                                                            const env::EnvMap& env) {
    CLI::App app{
        "ptrun [OPTIONS] PROGRAM [ARGS...]: a fast, torchrun-compatible launcher for distributed "
        "training",
        "ptrun"};
    app.prefix_command();
    app.formatter(std::make_shared<UsageFormatter>());
    app.footer(
        "Everything after PROGRAM goes to the workers untouched; `--` may end ptrun's options. "
        "A flag given twice takes its last value. A .py PROGRAM runs as python3 -u PROGRAM "
        "($PYTHON_EXEC chooses the interpreter) unless --no-python. A worker reading the terminal "
        "(pdb, input()) is lent it.\nSee man ptrun for the worker environment, exit codes, logs "
        "and debuggers.");
    bool want_version = false;
    app.add_flag("--version", want_version, "Print the version and exit");

    std::map<std::string, std::string> given;
    std::map<std::string, CLI::Option*> handles;
    for (const auto& spec : kOptions) {
        std::string names = flag_names(spec);
        std::string help = help_text(spec);
        auto* opt = spec.is_flag ? app.add_flag(names)->description(help)
                                 : app.add_option(names, given[spec.name], help);
        // Given twice, the last value wins, as in torchrun (wrapper scripts append overrides).
        opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        if (!spec.is_flag && *spec.fallback) opt->default_str(spec.fallback);
        handles[spec.name] = opt;
    }

    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        return InfoRequest{app.help()};
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
    if (want_version) return InfoRequest{"ptrun " + std::string(kVersion) + "\n"};

    LaunchOptions out;
    for (const auto& spec : kOptions) {
        RawValue raw{spec.fallback, Source::Default, {}};
        if (handles[spec.name]->count() > 0) {
            raw = {spec.is_flag ? "1" : given[spec.name], Source::Flag, {}};
        } else if (auto it = env.find(pet_name(spec.name)); it != env.end()) {
            raw = {it->second, Source::PetEnv, {}};
        }
        out.values.emplace(spec.name, std::move(raw));
    }
    auto rest = app.remaining();
    if (!rest.empty() && rest.front() == "--")
        rest.erase(rest.begin());  // ptrun [OPTIONS] -- PROGRAM
    if (rest.empty()) {
        if (out.flag("explain")) return out;
        throw UsageError(
            "missing PROGRAM: expected ptrun [OPTIONS] PROGRAM [ARGS...] (see ptrun --help)");
    }
    if (rest.front().size() > 1 && rest.front()[0] == '-') {
        throw UsageError("unknown option '" + rest.front() +
                         "': expected a torchrun option before PROGRAM (see ptrun --help)");
    }
    out.program = rest.front();
    out.program_args.assign(rest.begin() + 1, rest.end());
    return out;
}

}  // namespace ptrun::launcher
