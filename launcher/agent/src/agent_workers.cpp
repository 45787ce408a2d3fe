#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "agent_impl.hpp"
#include "ptrun/env/generation_keys.hpp"
#include "ptrun/env/names.hpp"
#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/launcher/process/spawn.hpp"
#include "ptrun/placement/binding_report.hpp"
#include "ptrun/watchdog/log_lines.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

namespace {

int open_log(const std::string& path, const LaunchConfig& c) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw EnvironmentError(
            errno_message("cannot open log file '" + path + "'", errno, open_files_needed(c)));
    }
    return fd;
}

}  // namespace

void Agent::Impl::start_attempt() {
    if (preload_loading) {  // started once the zygote is ready (or unusable)
        start_waits = true;
        return;
    }
    workers.assign(static_cast<std::size_t>(config.nproc_per_node), Worker{});
    timeline_attempt_started();
    for (auto& shared : filtered_logs) shared.reset();  // each attempt's own filtered_*.log
    followers.unwatch_all();                            // the last attempt's log files
    launcher->begin_attempt();
    try {
        const auto ids = identify_workers();  // every directory first: a full disk starts nobody
        launcher->note_temp_dir(logs.temporary_error_root());
        // The watchdog's files are made for every worker before any starts, too; without them,
        // each request (its environment) is built right before its worker starts, so that
        // building the next one overlaps this one's exec instead of delaying the first worker.
        std::vector<SpawnRequest> requests;
        if (watch) {
            for (int lr = 0; lr < config.nproc_per_node; ++lr) {
                requests.push_back(worker_request(lr, ids[static_cast<std::size_t>(lr)]));
            }
            watch_attempt(requests);
        }
        check_open_files_for_attempt();  // too few descriptors: refused before any worker runs
        for (int lr = 0; lr < config.nproc_per_node; ++lr) {
            const auto i = static_cast<std::size_t>(lr);
            SpawnRequest built;
            if (!watch) built = worker_request(lr, ids[i]);
            auto& request = watch ? requests[i] : built;
            spawn(lr, request);
            if (config.report_bindings) report_binding(lr, request);
        }
        launcher->attempt_spawned();  // overlaps the workers' exec (nothing is reaped before it)
        if (watch) watch_started();
    } catch (const EnvironmentError& e) {
        log->error("{}", e.what());
        finish(1);  // stops the workers already started
    }
}

std::vector<env::WorkerIdentity> Agent::Impl::identify_workers() {
    logs.begin_attempt(state.restart_count, placement.round);
    std::vector<env::WorkerIdentity> ids;
    ids.reserve(static_cast<std::size_t>(config.nproc_per_node));
    for (int lr = 0; lr < config.nproc_per_node; ++lr) {
        ids.push_back(worker_identity(lr, logs.error_dir(lr)));
    }
    return ids;
}

env::WorkerIdentity Agent::Impl::worker_identity(int lr, const std::string& error_dir) {
    const int world = config.nproc_per_node;
    const auto& p = placement;
    auto& w = workers[static_cast<std::size_t>(lr)];
    w.slot = lr;
    w.end.host = config.hostname;
    w.end.local_rank = lr;
    w.end.rank = p.rank_base + lr;
    w.end.error_file = error_dir + "/error.json";
    // The runner sums up an uncaught ImportError there, for the report's interpreter hint.
    w.end.exception_file = command.runner.empty() ? "" : error_dir + "/exception.txt";
    env::WorkerIdentity id;
    id.local_rank = lr;
    id.rank = w.end.rank;
    id.group_rank = p.group_rank;
    id.role_rank = w.end.rank;
    id.role_name = config.role;
    id.local_world_size = world;
    id.world_size = p.world_size;
    id.group_world_size = p.nodes;
    id.role_world_size = p.world_size;
    id.master_addr = p.master_addr;
    id.master_port = p.master_port;
    if (config.store_relay) {
        if (!store_relay) store_relay = std::make_unique<WorkerStoreRelay>(log);
        const auto relayed = store_relay->endpoint_for(p.master_addr, p.master_port);
        id.master_addr = relayed.host;
        id.master_port = relayed.port;
    }
    // A replacement's count goes on from its attempt's: each replacement is a restart.
    id.restart_count = state.restart_count + state.generation;
    id.max_restarts = config.max_restarts;
    id.run_id = config.run_id;
    id.use_agent_store = store.agent_hosted;
    id.use_libuv = config.rdzv.use_libuv;
    id.error_file = w.end.error_file;
    if (config.requeue) {  // SLURM_RESTART_COUNT is unset (0) until the first requeue
        const auto count = env::lookup(parent_env, env::names::kSlurmRestartCount);
        id.requeue_count = static_cast<int>(env::parse_int(count.value_or("0")).value_or(0));
    }
    if (local.scheduled) apply_placement(*local.scheduled, id);  // one task per rank
    w.end.rank = id.rank;  // the worker's RANK and LOCAL_RANK, for reports
    w.end.local_rank = id.local_rank;
    return id;
}

SpawnRequest Agent::Impl::worker_request(int lr, const env::WorkerIdentity& id) {
    const auto& w = workers[static_cast<std::size_t>(lr)];
    SpawnRequest request{command.exec_path, command.argv_for(lr), env::worker_env(id, parent_env)};
    if (config.restart_policy == RestartPolicyKind::Failed) {
        namespace keys = env::generation_keys;
        request.env[std::string(keys::kPolicyEnv)] = keys::kFailedPolicy;
        request.env[std::string(keys::kGenerationEnv)] = std::to_string(state.generation);
    }
    if (!w.end.exception_file.empty()) {
        request.env["PTRUN_ERROR_SUMMARY_FILE"] = w.end.exception_file;
    }
    apply_to_env(local, lr, request.env);
    pass_worker_events(request);
    const auto& slot = local.workers[static_cast<std::size_t>(lr)];
    if (slot.binding) request.binding = &slot.prepared;
    return request;
}

void Agent::Impl::spawn(int lr, SpawnRequest& req) {
    auto& w = workers[static_cast<std::size_t>(lr)];
    auto out = plumb(StdMask::Out, lr, STDOUT_FILENO);
    req.stdout_fd = out.child_fd;
    struct CloseChildEnds {
        SpawnRequest& r;
        ~CloseChildEnds() {
            if (r.stdout_fd >= 0) ::close(r.stdout_fd);
            if (r.stderr_fd >= 0) ::close(r.stderr_fd);
        }
    } close_child_ends{req};
    auto err = plumb(StdMask::Err, lr, STDERR_FILENO);
    req.stderr_fd = err.child_fd;
    w.end.stderr_log = err.log_path;
    for (const auto* stream : {&out, &err}) {
        if (stream->direct) w.direct_logs.push_back(stream->log_path);
    }
    note_log_files(w, out, err);
    state.alive += 1;
    if (zygote && zygote->ready() && fork_from_zygote(lr, req)) return;
    launch_worker(lr, req, "exec");
}

void Agent::Impl::launch_worker(int lr, SpawnRequest& req, const char* how) {
    auto& w = workers[static_cast<std::size_t>(lr)];
    try {
        record(Phase::Spawn, w.end.rank, how);
        w.end.pid = launcher->launch(req);  // tags it PTRUN_JOB_TAG, into the job's cgroup
        w.alive = true;
        usage_started(w);
        release_output(w);
        record(Phase::Started, w.end.rank);
    } catch (const EnvironmentError& e) {
        release_output(w);
        state.alive -= 1;  // never started: no exit will come
        throw EnvironmentError("local rank " + std::to_string(w.end.local_rank) + ": " + e.what());
    } catch (const SpawnError& e) {
        release_output(w);
        log->error("local rank {}: {}", w.end.local_rank, e.what());
        w.end.exit = WorkerExit{127, 0};
        w.end.time = std::chrono::system_clock::now();
        usage_started(w);
        w.exited_at = std::chrono::steady_clock::now();
        usage_ended(w, "not started (exit code 127)");
        asio::post(io, [this, lr] { apply(WorkerExited{lr, WorkerExit{127, 0}}); });
    }
}

bool Agent::Impl::fork_from_zygote(int lr, SpawnRequest& req) {
    auto& w = workers[static_cast<std::size_t>(lr)];
    auto pending = std::make_shared<PendingFork>();
    pending->request = req;
    for (auto [from, to] :
         {std::pair{req.stdout_fd, &pending->out}, {req.stderr_fd, &pending->err}}) {
        if (from < 0) continue;
        *to = sys::Fd(::fcntl(from, F_DUPFD_CLOEXEC, 0));
        if (!*to) return false;  // no descriptor to spare: started here, whose error says so
    }
    pending->request.stdout_fd = pending->out ? pending->out.get() : -1;
    pending->request.stderr_fd = pending->err ? pending->err.get() : -1;
    const auto ticket =
        launcher->fork_worker(*zygote, req, [this, lr](pid_t pid) { forked(lr, pid); });
    if (ticket == 0) return false;
    record(Phase::Spawn, w.end.rank, "fork");
    pending->ticket = ticket;
    w.fork = std::move(pending);
    w.alive = true;
    return true;
}

void Agent::Impl::forked(int lr, pid_t pid) {
    auto& w = workers[static_cast<std::size_t>(lr)];
    auto pending = std::move(w.fork);
    if (!pending || finished) return;
    if (pid > 0) {
        w.end.pid = pid;
        usage_started(w);
        release_output(w);
        record(Phase::Started, w.end.rank);
        status_changed();
        return;
    }
    w.alive = false;  // until launch_worker has started it (the zygote said why it did not)
    try {
        launch_worker(lr, pending->request, "exec");
    } catch (const EnvironmentError& e) {
        log->error("{}", e.what());
        finish(1);
    }
}

void Agent::Impl::cancel_fork(Worker& w) {
    if (w.fork && zygote) zygote->cancel(w.fork->ticket);
    w.fork.reset();
}

void Agent::Impl::drop_fork(int lr, int signo) {
    auto& w = workers[static_cast<std::size_t>(lr)];
    if (!w.fork) return;
    cancel_fork(w);
    w.alive = false;
    w.end.stopped_by_ptrun = true;
    w.end.exit = WorkerExit{0, signo};
    w.end.time = std::chrono::system_clock::now();
    w.exited_at = std::chrono::steady_clock::now();
    record(Phase::Exit, w.end.rank, "not started: stopped before the zygote forked it");
    asio::post(io, [this, lr, signo] {
        if (!finished) apply(WorkerExited{lr, WorkerExit{0, signo}});
    });
}

Agent::Impl::StreamRoute Agent::Impl::route_of(StdMask stream, int local_rank) const {
    StreamRoute r;
    const bool filtered_out =
        config.local_ranks_filter && !config.local_ranks_filter->count(local_rank);
    r.tee = has(config.tee.for_rank(local_rank), stream) && !filtered_out;
    r.to_file = r.tee || filtered_out || has(config.redirects.for_rank(local_rank), stream);
    r.filtered = !(stream == StdMask::Out ? config.stdout_filters : config.stderr_filters).empty();
    return r;
}

int Agent::Impl::fds_kept(int local_rank) const {
    int kept = 0;
    for (auto stream : {StdMask::Out, StdMask::Err}) {
        const auto r = route_of(stream, local_rank);
        if (!r.tee && !r.filtered) continue;  // inherited, or a log file the worker alone holds
        kept += 1 + (r.to_file ? 2 : 0);      // the pipe's read end, the relay's log file and times
    }
    return kept;
}

void Agent::Impl::check_open_files_for_attempt() const {
    rlimit lim{};
    const int open_now = open_fd_count();
    if (open_now < 0 || ::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
        return;  // unknown: each open() still says what it could not do
    }
    int needed = open_now + 4;  // a pipe's two ends and a log file open while one worker starts
    for (int lr = 0; lr < config.nproc_per_node; ++lr) needed += fds_kept(lr);
    if (static_cast<rlim_t>(needed) > lim.rlim_cur) {
        throw EnvironmentError(
            errno_message("cannot start " + std::to_string(config.nproc_per_node) + " workers",
                          EMFILE, std::max(needed, open_files_needed(config))));
    }
}

Agent::Impl::StreamPlumbing Agent::Impl::plumb(StdMask stream, int local_rank, int console_fd) {
    const auto route = route_of(stream, local_rank);
    const bool tee = route.tee;
    const bool to_file = route.to_file;
    const auto& filters = stream == StdMask::Out ? config.stdout_filters : config.stderr_filters;
    if (!to_file && filters.empty()) return {};
    StreamPlumbing p;
    int log_fd = -1;
    if (to_file) {
        p.log_path =
            logs.log_dir(local_rank) + (stream == StdMask::Out ? "/stdout.log" : "/stderr.log");
        log_fd = open_log(p.log_path, config);
        announce_logs();
        if (!tee && filters.empty()) {
            p.child_fd = log_fd;
            p.direct = true;
            return p;
        }
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        int err = errno;
        if (log_fd >= 0) ::close(log_fd);
        throw EnvironmentError(errno_message(
            tee ? "cannot make a pipe for --tee" : "cannot make a pipe for the output filters", err,
            open_files_needed(config)));
    }
    auto& w = workers[static_cast<std::size_t>(local_rank)];
    const std::string prefix = line_prefix(w);
    RelayTarget target;
    target.log_fd = log_fd;
    target.log_path = p.log_path;
    if (log_fd >= 0) target.times_path = watchdog::log_times_path(p.log_path);
    // Tee'd: prefixed on the console; not sent to a file: on the console as the worker wrote it.
    if (tee || !to_file)
        target.console = console_fd == STDOUT_FILENO ? &console->out : &console->err;
    if (tee) target.prefix = prefix;
    target.on_log_error = [this](const std::string& path, int err) {
        log_health.write_failed(path, err);
    };
    target.on_logged = [this] { followers.written(); };
    if (!filters.empty()) {
        target.filtered_log = filtered_log(stream);
        target.filters = filters;
        target.filtered_prefix = prefix;
    }
    // A ${pid} prefix waits for the pid: the relay reads from the start once it is known.
    target.wait_for_prefix = config.log_line_prefix && config.log_line_prefix->uses_pid();
    const bool held = target.wait_for_prefix;
    relays.push_back(std::make_unique<OutputRelay>(io, fds[0], std::move(target)));
    if (held) w.held_relays.emplace_back(relays.back().get(), tee);
    p.child_fd = fds[1];
    return p;
}

std::string Agent::Impl::line_prefix(const Worker& w) const {
    if (!config.log_line_prefix) {
        return "[" + config.hostname + ":" + std::to_string(w.end.rank) + "] ";
    }
    LinePrefixFields fields;
    fields.role_name = config.role;
    fields.rank = w.end.rank;
    fields.local_rank = w.end.local_rank;
    if (w.end.pid > 0) fields.pid = w.end.pid;
    fields.hostname = config.hostname;
    return config.log_line_prefix->expand(fields);
}

void Agent::Impl::release_output(Worker& w) {
    if (w.held_relays.empty()) return;
    const std::string prefix = line_prefix(w);
    for (auto [relay, tee] : w.held_relays) relay->begin(tee ? prefix : "", prefix);
    w.held_relays.clear();
}

std::shared_ptr<SharedLog> Agent::Impl::filtered_log(StdMask stream) {
    auto& shared = filtered_logs[stream == StdMask::Out ? 0 : 1];
    if (shared) return shared;
    std::string path = logs.attempt_log_dir() +
                       (stream == StdMask::Out ? "/filtered_stdout.log" : "/filtered_stderr.log");
    shared = std::make_shared<SharedLog>(open_log(path, config), path);
    announce_logs();
    return shared;
}

void Agent::Impl::report_binding(int lr, const SpawnRequest& request) {
    const auto& w = workers[static_cast<std::size_t>(lr)];
    if (!w.alive) return;  // it did not start: spawn() said why
    const auto& slot = local.workers[static_cast<std::size_t>(lr)];
    placement::WorkerPlacement line;
    line.host = config.hostname;
    line.rank = w.end.rank;
    line.local_rank = lr;
    line.bound = slot.binding.has_value();
    if (slot.binding) {
        line.cpus = slot.binding->cpus;
        line.mems = slot.binding->mems;
    } else {
        if (!inherited_cpus) inherited_cpus = placement::read_process_limits().cpus;
        line.cpus = *inherited_cpus;
    }
    line.gpus = worker_gpus(local, request.env);
    log->info("{}", placement::binding_report_line(line));
}

void Agent::Impl::announce_logs() {
    if (announced_logs) return;
    announced_logs = true;
    if (config.log_dir.empty()) log->info("worker logs: {}", logs.run_log_dir());
    open_run_log();
}

}  // namespace ptrun::launcher
