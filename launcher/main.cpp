// ptrun: the only place that reads the process environment, installs process-wide signal
// dispositions, configures logging, and turns exceptions into exit codes (see man ptrun).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/agent/agent.hpp"
#include "ptrun/launcher/agent/agent_store.hpp"
#include "ptrun/launcher/agent/early_health.hpp"
#include "ptrun/launcher/agent/multi_node.hpp"
#include "ptrun/launcher/agent/placement_store.hpp"
#include "ptrun/launcher/agent/requeue_wait.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/launcher_env_defaults.hpp"
#include "ptrun/launcher/cli/logs_args.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/hosts/host_fleet.hpp"
#include "ptrun/launcher/hosts/host_launch.hpp"
#include "ptrun/launcher/hosts/host_lines.hpp"
#include "ptrun/launcher/hosts/launcher_pipe_relay.hpp"
#include "ptrun/launcher/hosts/launcher_pipe_watch.hpp"
#include "ptrun/launcher/hosts/remote_env.hpp"
#include "ptrun/launcher/membership/placement_exit.hpp"
#include "ptrun/launcher/membership/rdzv_auth.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/launcher/output/console_log_sink.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/output/python_log_level.hpp"
#include "ptrun/launcher/plan/explain.hpp"
#include "ptrun/launcher/plan/host_facts.hpp"
#include "ptrun/launcher/plan/launch_plan.hpp"
#include "ptrun/launcher/plan/local_placement.hpp"
#include "ptrun/launcher/plan/worker_command.hpp"
#include "ptrun/launcher/process/containment.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/launcher/process/slurm_requeue.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/watchdog/health_server.hpp"
#include "ptrun/watchdog/log_lines.hpp"
#include "ptrun/watchdog/logs_client.hpp"
#include "ptrun/watchdog/status_client.hpp"

extern char** environ;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitInternal = 1;
constexpr int kExitEnvironment = 1;  // the machine refused something (no space, open files, ...)
constexpr int kExitNoStatus = 3;     // ptrun status: nothing, or not ptrun, answered
/// How long `ptrun status` waits for the whole answer.
constexpr std::chrono::milliseconds kStatusDeadline{5'000};
/// How long `scontrol requeue` may take (slurmctld answers in well under a second).
constexpr std::chrono::milliseconds kRequeueDeadline{30'000};

/// `text` on standard output, whole (ptrun writes no iostreams: cli11.hpp says why).
void print_out(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

/// The console's level from torchrun's LOGLEVEL (unset: info); throws UsageError naming it.
spdlog::level::level_enum console_level(const ptrun::env::EnvMap& env) {
    const auto text = ptrun::env::lookup(env, "LOGLEVEL");
    if (!text || text->empty()) return spdlog::level::info;
    if (auto level = ptrun::launcher::python_log_level(*text)) return *level;
    throw ptrun::launcher::UsageError("LOGLEVEL '" + ptrun::launcher::printable(*text) +
                                      "': expected DEBUG, INFO, WARNING, ERROR or CRITICAL (a "
                                      "Python logging level, as torchrun)");
}

std::shared_ptr<spdlog::logger> make_logger(
    const std::string& host, const std::shared_ptr<ptrun::launcher::Console>& console,
    const ptrun::env::EnvMap& env) {
    using ptrun::launcher::ConsoleLogSink;
    std::shared_ptr<ptrun::launcher::ConsoleStream> err(console, &console->err);
    std::shared_ptr<ptrun::launcher::RunLog> run_log(console, &console->run_log);
    auto sink = std::make_shared<ConsoleLogSink>(err, ptrun::env::lookup(env, "TERM").value_or(""),
                                                 std::move(run_log));
    sink->set_console_level(console_level(env));  // checked by launch() before
    auto logger = std::make_shared<spdlog::logger>("ptrun", std::move(sink));
    logger->set_pattern("[ptrun " + host + ":" + std::to_string(::getpid()) + "] %^%l%$: %v");
    logger->set_level(spdlog::level::debug);  // debug lines: the run log's alone (the sink)
    return logger;
}

int run_job(const ptrun::launcher::LaunchPlan& plan, ptrun::launcher::LocalPlacement local,
            ptrun::env::EnvMap env, const std::vector<std::string>& warnings,
            std::unique_ptr<ptrun::launcher::LauncherPipeWatch> launcher_watch);

/// --from-launcher, until the agent runs: the launching ptrun's pipe (stdin) ending stops this
/// ptrun as SIGTERM does (nothing of the job runs yet: no worker has started).
std::unique_ptr<ptrun::launcher::LauncherPipeWatch> watch_launcher_pipe_early() {
    return std::make_unique<ptrun::launcher::LauncherPipeWatch>(STDIN_FILENO, [] {
        constexpr std::string_view line =
            "ptrun: the launching ptrun's pipe (stdin) closed before the job started here: it "
            "stopped, or it or its remote shell is gone; stopping as on SIGTERM\n";
        [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, line.data(), line.size());
        ::kill(::getpid(), SIGTERM);
    });
}

/// Each host's ptrun command line, checked here as that ptrun checks it, but against a host with
/// every kind of device (any_host_facts: the device kinds and counts are each host's own): a bad
/// value is a usage error before any remote shell starts.
void check_host_options(const ptrun::launcher::HostsPlan& plan,
                        const ptrun::launcher::EnvPairs& remote_env) {
    using namespace ptrun::launcher;
    const ptrun::env::EnvMap env(remote_env.begin(), remote_env.end());
    const auto any = any_host_facts();
    for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
        try {
            const auto parsed = parse_command_line(plan.hosts[i].ptrun_args, env);
            if (const auto* options = std::get_if<LaunchOptions>(&parsed)) resolve(*options, any);
        } catch (const UsageError& e) {
            if (i == 0) throw;  // the first host's error is every host's
            throw UsageError("host " + printable(plan.hosts[i].name) + ": " + e.what());
        }
    }
}

/// `ptrun --hosts/--hostfile`: one ptrun per host through the remote shell; the job's code.
int launch_hosts(const ptrun::launcher::LaunchOptions& options, const ptrun::env::EnvMap& env) {
    using namespace ptrun::launcher;
    std::string hostfile_text;
    if (options.given(Option::Hostfile)) {
        hostfile_text = read_host_file("--hostfile", options.at(Option::Hostfile).value);
    }
    const auto hosts = selected_hosts(options, hostfile_text);
    HostsContext context;
    context.directory = std::filesystem::current_path().string();
    context.self_path = std::filesystem::read_symlink("/proc/self/exe").string();
    EnvPairs file;
    const std::string env_file = context.directory + "/" + std::string(kRemoteEnvFile);
    if (::access(env_file.c_str(), F_OK) == 0) {
        file = parse_env_file(read_host_file(kRemoteEnvFile, env_file), env_file);
    }
    context.env = remote_env(env, options.at(Option::Export).value, file);
    const auto facts = read_host_facts(env);
    context.run_id = "hosts-" + facts.random_id;
    const auto plan = make_hosts_plan(options, hosts, context);
    check_host_options(plan, context.env);
    console_level(env);  // a bad LOGLEVEL is a usage error before anything starts
    FleetOptions fleet;
    for (char** e = environ; *e != nullptr; ++e) fleet.env.emplace_back(*e);
    fleet.shell_text = options.at(Option::RemoteShell).value;
    // Each host's ptrun stops its workers within --shutdown-timeout; its remote shell gets a
    // minute more (the rendezvous's leave) before it is killed.
    const double grace = std::strtod(options.at(Option::ShutdownTimeout).value.c_str(), nullptr);
    fleet.stop_deadline = std::chrono::milliseconds(
        static_cast<long long>((grace > 0 && grace < 86400 ? grace : 30.0) * 1000.0) + 60'000);
    auto console = std::make_shared<Console>();
    auto logger = make_logger(facts.hostname, console, env);
    const int code = run_host_fleet(plan, fleet, console, logger);
    console->run_log.write("ptrun exits with code " + std::to_string(code));
    return code;
}

/// The exit code for the exception `error` ends ptrun with, and in `message` the line saying it.
int error_exit(std::exception_ptr error, std::string* message) {
    using ptrun::launcher::printable;
    auto say = [message](const std::string& prefix, const char* what) {
        *message = prefix + printable(what) + "\n";
    };
    try {
        std::rethrow_exception(error);
    } catch (const ptrun::launcher::UsageError& e) {
        say("ptrun: error: ", e.what());
        return kExitUsage;
    } catch (const ptrun::launcher::RendezvousError& e) {
        say("ptrun: error: ", e.what());
        return e.exit_code;
    } catch (const ptrun::launcher::EnvironmentError& e) {
        say("ptrun: error: ", e.what());
        return kExitEnvironment;
    } catch (const ptrun::rdzv::StoreError& e) {
        say("ptrun: error: cannot start the workers' store: ", e.what());
        return kExitInternal;
    } catch (const std::exception& e) {
        say("ptrun: internal error: ", e.what());
        return kExitInternal;
    }
}

/// `ptrun status HOST:PORT`: a running ptrun's /status (its --health-port) as a table on stdout.
/// 0 when healthy, 1 when not, 3 when nothing or something else than ptrun answers.
int show_status(const std::vector<std::string>& args) {
    using namespace ptrun::launcher;
    if (args.size() != 2) {
        throw UsageError("ptrun status: expected one HOST:PORT, a running ptrun's --health-port");
    }
    const auto at = split_endpoint(args[1], "ptrun status");
    if (!at.port || *at.port == 0) {
        throw UsageError("ptrun status '" + args[1] +
                         "': expected HOST:PORT with PORT from 1 to 65535 (the --health-port)");
    }
    const std::string where = format_endpoint(at.host, *at.port);
    const auto got = ptrun::watchdog::http_get(at.host, *at.port, "/status", kStatusDeadline);
    if (got.status == 0) {
        std::fprintf(stderr, "ptrun status: no ptrun answers at %s: %s\n", where.c_str(),
                     printable(got.error).c_str());
        return kExitNoStatus;
    }
    auto table = got.status == 200 ? ptrun::watchdog::status_table(got.body) : std::nullopt;
    if (!table) {
        std::fprintf(stderr,
                     "ptrun status: %s answered HTTP %d, but not with a ptrun /status document "
                     "(is it a ptrun --health-port?)\n",
                     where.c_str(), got.status);
        return kExitNoStatus;
    }
    std::fputs(table->text.c_str(), stdout);
    return table->healthy ? 0 : 1;
}

/// `ptrun logs HOST:PORT ...`: the worker lines of every node of the job whose store host's
/// --health-port is HOST:PORT, merged in time order on stdout; what did not come on stderr. 0 when
/// every line asked for came, 1 when some did not, 3 when nothing, or something other than ptrun,
/// answers. --follow: then the new lines until the job ends, and the job's exit code (1 when its
/// end was not seen).
int show_logs(const std::vector<std::string>& args) {
    const auto parsed = ptrun::launcher::parse_logs_args(args, ptrun::watchdog::kMaxLogTail);
    ptrun::watchdog::LogsRequest request{parsed.host, parsed.port, parsed.ranks, parsed.tail,
                                         kStatusDeadline};
    bool missing = false;
    auto print_lines = [](const std::string& text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    };
    auto print_missing = [&missing](const std::string& sentence) {
        missing = true;
        std::fprintf(stderr, "ptrun logs: %s\n", sentence.c_str());
    };
    const ptrun::watchdog::LogsSink sink{print_lines, print_missing};
    const auto got = parsed.follow ? ptrun::watchdog::follow_logs(request, sink)
                                   : ptrun::watchdog::fetch_logs(request);
    const std::string where = ptrun::launcher::format_endpoint(parsed.host, parsed.port);
    if (!got.answered) {
        std::fprintf(stderr, "ptrun logs: no ptrun answers at %s: %s\n", where.c_str(),
                     ptrun::launcher::printable(got.error).c_str());
        return kExitNoStatus;
    }
    sink.lines(got.text);
    for (const auto& m : got.missing) sink.missing(m);
    if (!parsed.follow) return missing ? 1 : 0;
    if (got.exit_code) return *got.exit_code;
    std::fprintf(stderr, "ptrun logs: the job's end was not seen (no node answered to the end)\n");
    return 1;
}

int launch(const std::vector<std::string>& args) {
    using namespace ptrun::launcher;
    if (!args.empty() && args[0] == "status") return show_status(args);
    if (!args.empty() && args[0] == "logs") return show_logs(args);
    auto env = ptrun::env::from_environ(environ);
    auto parsed = parse_command_line(args, env);
    if (auto* info = std::get_if<InfoRequest>(&parsed)) {
        print_out(info->text);
        return 0;
    }
    if (wants_hosts(std::get<LaunchOptions>(parsed))) {
        return launch_hosts(std::get<LaunchOptions>(parsed), env);
    }
    const auto& launcher_name = std::get<LaunchOptions>(parsed).at(Option::FromLauncher).value;
    const bool from_launcher = !launcher_name.empty();
    // --from-launcher: the launching ptrun's signals, relayed for the whole run; it outlives
    // the watch and the agent, which watch the inner pipe it puts on stdin.
    std::unique_ptr<LauncherPipeRelay> launcher_relay;
    std::unique_ptr<LauncherPipeWatch> launcher_watch;  // --from-launcher: until the agent runs
    if (from_launcher) {
        check_host_name(launcher_name, "--from-launcher");
        // The launching ptrun's sign that ptrun runs here (host_lines.hpp), before anything
        // else is written.
        const std::string line = std::string(kAgentStartedLine) + "\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fflush(stdout);
        launcher_relay = std::make_unique<LauncherPipeRelay>(STDIN_FILENO);
        launcher_watch = watch_launcher_pipe_early();
    }
    console_level(env);  // a bad LOGLEVEL is a usage error before anything starts
    auto defaults =
        apply_launcher_env(std::get<LaunchOptions>(std::move(parsed)), env, read_host_file);
    const auto& options = defaults.options;
    auto host = read_host_facts(env);
    if (from_launcher) host.hostname = options.at(Option::FromLauncher).value;  // its prefix
    const auto plan = make_launch_plan(options, defaults.placement, host, env);
    const auto& config = config_of(plan);
    auto local = plan_local_placement(config, host_devices(host, config.device_kind), env,
                                      placement_sources(host, config.device_kind));
    if (config.explain) {
        const auto installation = this_installation();
        const auto* per_rank = std::get_if<PerRankLaunch>(&plan);
        auto rows = explain_worker_command(config, options, env, installation, per_rank != nullptr);
        rows.push_back(explain_devices_row(host));
        for (auto& row : explain_rows(local, config, env)) rows.push_back(std::move(row));
        rows.push_back(explain_containment_row(env));
        rows.push_back(explain_memory_limit_row(config, options));
        print_out(explain(config, per_rank ? &per_rank->placement : nullptr, options,
                          find_interpreter(config, env, installation), rows));
        for (const auto& warning : local.warnings) print_out("warning: " + warning + "\n");
        return 0;
    }
    return run_job(plan, std::move(local), std::move(env), defaults.warnings,
                   std::move(launcher_watch));  // says its own errors
}

/// What every mode's agent is given besides its store; run_job keeps the console and logger to
/// the end, so that they outlive the agent and the store.
struct Job {
    ptrun::launcher::WorkerCommand command;
    ptrun::launcher::LocalPlacement local;
    ptrun::env::EnvMap env;
    std::shared_ptr<ptrun::launcher::Console> console;
    std::shared_ptr<spdlog::logger> logger;
    bool from_launcher = false;  ///< --from-launcher: stdin is the launching ptrun's pipe
    /// --from-launcher: the pipe's watch until the agent takes it over (run_agent).
    std::unique_ptr<ptrun::launcher::LauncherPipeWatch> launcher_watch;
};

/// --requeue, once the workers exited on --checkpoint-signal: node rank 0's ptrun requeues the
/// job; every ptrun then exits 0, which ends the batch script cleanly before the job runs again
/// (exit codes: man ptrun, PREEMPTION). 1 when the requeue failed (said).
int requeue_after_checkpoint(const ptrun::launcher::RequeueTarget& target, spdlog::logger& log) {
    if (!target.leader) {
        log.info(
            "workers exited on the checkpoint signal; the first task of node rank 0 requeues SLURM "
            "job {}",
            target.job_id);
        return 0;
    }
    // Said before: a requeue ends the job's steps, a batch script's ptrun included, often before
    // scontrol has returned here.
    log.info("requeueing SLURM job {} (scontrol requeue): it runs again with its checkpoint",
             target.job_id);
    const auto why = ptrun::launcher::requeue_slurm_job(target.job_id, kRequeueDeadline);
    if (!why.empty()) {
        log.error("--requeue: {}", why);
        return 1;
    }
    return 0;
}

/// --requeue on several nodes: node rank 0's workers are done, but `scontrol requeue` would kill
/// the other nodes' workers still checkpointing; wait (bounded) until they have ended.
void wait_before_requeue(const ptrun::launcher::LaunchConfig& config,
                         const ptrun::launcher::Membership& membership,
                         std::chrono::steady_clock::time_point checkpoint_started,
                         spdlog::logger& log) {
    using namespace ptrun::launcher;
    const auto deadline =
        requeue_deadline(checkpoint_started, config.checkpoint_grace, config.shutdown_timeout);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    log.info(
        "workers exited on the checkpoint signal; waiting for the other nodes' workers to end "
        "before requeueing (at most {})",
        seconds_text(std::max(left, std::chrono::milliseconds(0))));
    const auto waited = wait_for_other_nodes(membership.coordinator, membership.self_id, deadline);
    if (waited.all_ended) {
        log.info("--requeue: {}", waited.text);
    } else {
        log.warn("--requeue: {}", waited.text);
    }
}

/// How the agent ended, for what follows it (--requeue).
struct AgentEnd {
    int code = 0;
    bool checkpointed = false;  ///< the workers exited on --checkpoint-signal
    std::chrono::steady_clock::time_point checkpoint_started{};
};

/// Runs the agent to its end and destroys it (its signal handlers with it).
AgentEnd run_agent_to_end(const ptrun::launcher::LaunchConfig& config, Job& job,
                          ptrun::launcher::StoreEndpoint store,
                          std::optional<ptrun::launcher::Membership> membership,
                          ptrun::sys::Fd health_listener) {
    // The agent watches the launcher's pipe from here on (an end meanwhile stays readable).
    job.launcher_watch.reset();
    ptrun::launcher::Agent agent(config, std::move(job.command), std::move(job.local),
                                 std::move(job.env), std::move(store), job.logger,
                                 std::move(membership), job.console);
    if (health_listener) agent.serve_health_on(std::move(health_listener));
    if (job.from_launcher) {
        agent.watch_launcher_pipe(ptrun::sys::Fd(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)));
    }
    const int code = agent.run();
    return {code, agent.checkpointed(), agent.checkpoint_started()};
}

/// Runs the agent to its end, then requeues (--requeue after a checkpoint); returns the code.
int run_agent(const ptrun::launcher::LaunchConfig& config, Job& job,
              ptrun::launcher::StoreEndpoint store,
              std::optional<ptrun::launcher::Membership> membership = std::nullopt,
              ptrun::sys::Fd health_listener = {}) {
    const auto requeue = ptrun::launcher::requeue_target(job.env);  // env goes to the agent
    const auto nodes = membership;  // the agent takes it; --requeue waits on its coordinator
    const auto end = run_agent_to_end(config, job, std::move(store), std::move(membership),
                                      std::move(health_listener));
    if (!config.requeue || !end.checkpointed || !requeue) return end.code;
    if (requeue->leader && nodes) {
        wait_before_requeue(config, *nodes, end.checkpoint_started, *job.logger);
    }
    return requeue_after_checkpoint(*requeue, *job.logger);
}

/// One node: the agent hosts the workers' store.
int run_mode(const ptrun::launcher::SingleNodeLaunch& plan, Job& job) {
    auto store = ptrun::launcher::start_agent_store(plan.config, job.logger);
    return run_agent(plan.config, job, store.endpoint);
}

/// Several nodes: the rendezvous (store, coordinator, session) around the agent.
int run_mode(const ptrun::launcher::ElasticLaunch& plan, Job& job) {
    using namespace ptrun::launcher;
    const auto& config = plan.config;
    auto auth = make_rdzv_auth(config.rdzv.key_file, config.run_id, job.env, *job.logger);
    // Reaching the rendezvous may take up to join_timeout: --health-port answers meanwhile.
    std::optional<EarlyHealth> early;
    if (config.health_port) {
        try {
            early.emplace(config, job.logger);
        } catch (const ptrun::watchdog::HealthServerError& e) {
            job.logger->error("--health-port: {}", e.what());
            return 1;
        }
    }
    auto node = start_multi_node(config, plan.random_id, auth, job.logger);
    auto membership = node.membership();
    membership.close_timeout = config.rdzv.close_timeout;
    return run_agent(config, job, node.workers_store, membership,
                     early ? early->hand_over() : ptrun::sys::Fd{});
}

/// One task per rank (SLURM, MPI, ...): the agent's one worker, then the exit barrier.
int run_mode(const ptrun::launcher::PerRankLaunch& plan, Job& job) {
    auto store = ptrun::launcher::open_workers_store(plan.config, plan.placement, job.logger);
    job.local.scheduled = plan.placement;  // the agent's one worker takes the launcher's identity
    // run_agent destroys the agent, and its signal handlers go with it: a signal during the
    // barrier below ends ptrun at once.
    auto requeue = ptrun::launcher::requeue_target(job.env);  // env goes to the agent
    const auto end = run_agent_to_end(plan.config, job, store.endpoint, std::nullopt, {});
    if (!plan.config.requeue || !end.checkpointed || !requeue) {
        ptrun::launcher::placement_exit_barrier(plan.config, plan.placement, end.code,
                                                job.logger);  // store outlives ranks
        return end.code;
    }
    // --requeue: the task hosting the store requeues, once every rank's worker has ended (a
    // requeue kills the whole job), at most until the others' grace and shutdown are over.
    requeue->leader = plan.placement.hosts_store;
    const auto deadline = ptrun::launcher::requeue_deadline(
        end.checkpoint_started, plan.config.checkpoint_grace, plan.config.shutdown_timeout);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    ptrun::launcher::placement_checkpoint_barrier(plan.config, plan.placement, job.logger,
                                                  std::max(left, std::chrono::milliseconds(0)));
    return requeue_after_checkpoint(*requeue, *job.logger);
}

int run_job(const ptrun::launcher::LaunchPlan& plan, ptrun::launcher::LocalPlacement local,
            ptrun::env::EnvMap env, const std::vector<std::string>& warnings,
            std::unique_ptr<ptrun::launcher::LauncherPipeWatch> launcher_watch) {
    using namespace ptrun::launcher;
    const auto& config = config_of(plan);
    // Where ptrun is installed matters to Python workers only (the runner, the wheel's python).
    auto command = make_worker_command(config, env,
                                       runs_python(config) ? this_installation() : Installation{});
    auto console = std::make_shared<Console>();  // ptrun's stdout/stderr: writes never block ptrun
    auto logger = make_logger(config.hostname, console, env);
    for (const auto& warning : warnings) logger->warn("{}", warning);
    for (const auto& warning : local.warnings) logger->warn("{}", warning);
    const bool from_launcher = launcher_watch != nullptr;
    Job job{std::move(command), std::move(local),         std::move(env), console, logger,
            from_launcher,      std::move(launcher_watch)};
    int code = 0;
    try {
        code = std::visit([&job](const auto& mode) { return run_mode(mode, job); }, plan);
    } catch (...) {
        std::string message;
        try {
            rethrow_as_environment_error(
                open_files_needed(config));  // e.g. EMFILE: not ptrun's bug
        } catch (...) {
            code = error_exit(std::current_exception(), &message);
        }
        console->say(message);
    }
    console->run_log.write("ptrun exits with code " + std::to_string(code));
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);
    // ptrun writes to, and takes back, a terminal it has lent to a worker (a debugger): from the
    // background that raises SIGTTOU, which must never stop ptrun. Every thread inherits this
    // mask; workers start with an empty one (spawn.cpp).
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::sigprocmask(SIG_BLOCK, &ttou, nullptr);
    // Orphaned descendants of the workers become ptrun's children, to be ended with their
    // attempt (containment.hpp); if refused, describe() says so and the cgroup alone contains.
    ptrun::launcher::become_child_subreaper();
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        return launch(args);
    } catch (...) {
        std::string message;
        const int code = error_exit(std::current_exception(), &message);
        std::fputs(message.c_str(), stderr);
        return code;
    }
}
