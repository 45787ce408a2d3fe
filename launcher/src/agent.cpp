#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "ptrun/launcher/agent.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/decide.hpp"
#include "ptrun/launcher/failure_report.hpp"
#include "ptrun/launcher/log_layout.hpp"
#include "ptrun/launcher/output_relay.hpp"
#include "ptrun/launcher/spawn.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

namespace {

/// One worker of the current attempt.
struct Worker {
    WorkerEnd end;
    bool alive = false;
};

/// The child's end of one output stream, and what the agent keeps of it.
struct StreamPlumbing {
    int child_fd = -1;  ///< -1: inherit ptrun's stream
    std::string log_path;
};

int open_log(const std::string& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot open log file '" + path + "': " + std::strerror(errno));
    return fd;
}

}  // namespace

struct Agent::Impl {
    Impl(const LaunchConfig& c, WorkerCommand cmd, env::EnvMap e, StoreEndpoint s, std::shared_ptr<spdlog::logger> l)
        : config(c), command(std::move(cmd)), parent_env(std::move(e)), store(std::move(s)), log(std::move(l)),
          signals(io), grace(io), logs(c.log_dir, c.run_id) {
        policy.max_restarts = c.max_restarts;
    }

    const LaunchConfig& config;
    WorkerCommand command;
    env::EnvMap parent_env;
    StoreEndpoint store;
    std::shared_ptr<spdlog::logger> log;
    asio::io_context io{1};
    asio::signal_set signals;
    asio::steady_timer grace;
    LogLayout logs;
    GroupState state;
    RestartPolicy policy;
    std::vector<Worker> workers;
    std::vector<std::unique_ptr<OutputRelay>> relays;
    std::optional<WorkerEnd> root_cause;
    bool finished = false;
    bool announced_logs = false;
    int exit_code = 0;

    int run() {
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);
        signals.add(SIGCHLD);
        for (int s : config.signals_to_handle) signals.add(s);
        wait_signal();
        start_attempt();
        if (!finished) io.run();
        return exit_code;
    }

    void wait_signal() {
        signals.async_wait([this](boost::system::error_code ec, int signo) {
            if (ec || finished) return;
            if (signo == SIGCHLD) {
                reap();
            } else {
                log->info("received {}, {} the workers", signal_name(signo),
                          stops_job(signo) ? "stopping" : "forwarding it to");
                apply(SignalReceived{signo, stops_job(signo)});
            }
            if (!finished) wait_signal();
        });
    }

    static bool stops_job(int signo) { return signo != SIGUSR1 && signo != SIGUSR2; }

    void reap() {
        int status = 0;
        pid_t pid;
        while (!finished && (pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
            for (auto& w : workers) {
                if (!w.alive || w.end.pid != pid) continue;
                w.alive = false;
                w.end.exit = from_wait_status(status);
                w.end.time = std::chrono::system_clock::now();
                apply(WorkerExited{w.end.local_rank, w.end.exit});
                break;
            }
        }
    }

    void apply(const Event& ev) {
        bool had_failure = state.failure.has_value();
        Decision d = decide(state, policy, ev);
        if (!had_failure && d.next.failure) {
            root_cause = workers[static_cast<std::size_t>(d.next.failure->local_rank)].end;
        }
        state = d.next;
        act(d.action);
    }

    void act(const Action& a) {
        switch (a.kind) {
            case ActionKind::None:
                return;
            case ActionKind::Forward:
                signal_alive(a.signo, false);
                return;
            case ActionKind::TerminateGroup:
                signal_alive(a.signo, true);
                grace.expires_after(config.shutdown_timeout);
                grace.async_wait([this](boost::system::error_code ec) {
                    if (ec || finished) return;
                    log->warn("workers still running {} ms after {}; sending SIGKILL",
                                 config.shutdown_timeout.count(), "the stop signal");
                    apply(GraceExpired{});
                });
                return;
            case ActionKind::KillGroup:
                signal_alive(SIGKILL, true);
                return;
            case ActionKind::RestartGroup:
                announce_restart();
                end_attempt();
                if (store.reset) store.reset();
                start_attempt();
                return;
            case ActionKind::Finish:
                finish(a.exit_code);
                return;
        }
    }

    void signal_alive(int signo, bool by_ptrun) {
        for (auto& w : workers) {
            if (!w.alive) continue;
            if (by_ptrun) w.end.stopped_by_ptrun = true;
            signal_group(w.end.pid, signo);
        }
    }

    void announce_restart() {
        if (!root_cause) return;
        log->warn("worker rank {} (local rank {}, pid {}) failed: {}; restarting the worker group "
                     "(restart {} of {})",
                     root_cause->rank, root_cause->local_rank, root_cause->pid, describe(root_cause->exit),
                     state.restart_count, policy.max_restarts);
        root_cause.reset();
    }

    /// Kills what is left in the attempt's process groups and flushes its output.
    void end_attempt() {
        grace.cancel();
        for (auto& w : workers) signal_group(w.end.pid, SIGKILL);
        for (auto& r : relays) r->drain();
        relays.clear();
    }

    void finish(int code) {
        end_attempt();
        exit_code = code;
        finished = true;
        if (root_cause && !state.stop_signal) {
            std::vector<WorkerEnd> others;
            for (const auto& w : workers) {
                if (w.end.pid != root_cause->pid) others.push_back(w.end);
            }
            auto report = format_failure_report(*root_cause, others, state.restart_count, policy.max_restarts);
            write_all(STDERR_FILENO, report.data(), report.size());
        }
        boost::system::error_code ignored;
        signals.cancel(ignored);
        io.stop();
    }

    StreamPlumbing plumb(StdMask stream, int attempt, int local_rank, int rank, int console_fd) {
        bool filtered_out = config.local_ranks_filter && !config.local_ranks_filter->count(local_rank);
        bool tee = has(config.tee.for_rank(local_rank), stream) && !filtered_out;
        bool to_file = tee || filtered_out || has(config.redirects.for_rank(local_rank), stream);
        if (!to_file) return {};
        StreamPlumbing p;
        p.log_path = logs.log_dir(attempt, local_rank) + (stream == StdMask::Out ? "/stdout.log" : "/stderr.log");
        int log_fd = open_log(p.log_path);
        announce_logs();
        if (!tee) {
            p.child_fd = log_fd;
            return p;
        }
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            ::close(log_fd);
            throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
        }
        std::string prefix = "[" + config.hostname + ":" + std::to_string(rank) + "] ";
        relays.push_back(std::make_unique<OutputRelay>(io, fds[0], RelayTarget{log_fd, console_fd, prefix}));
        p.child_fd = fds[1];
        return p;
    }

    void announce_logs() {
        if (announced_logs) return;
        announced_logs = true;
        log->info("worker logs: {}", logs.run_log_dir());
    }

    void start_attempt() {
        workers.assign(static_cast<std::size_t>(config.nproc_per_node), Worker{});
        const int attempt = state.restart_count;
        const int world = config.nproc_per_node;
        for (int lr = 0; lr < world; ++lr) {
            auto& w = workers[static_cast<std::size_t>(lr)];
            w.end.host = config.hostname;
            w.end.local_rank = lr;
            w.end.rank = config.node_rank * config.nproc_per_node + lr;
            w.end.error_file = logs.error_dir(attempt, lr) + "/error.json";
            env::WorkerIdentity id;
            id.local_rank = lr;
            id.rank = w.end.rank;
            id.group_rank = config.node_rank;
            id.role_rank = w.end.rank;
            id.role_name = config.role;
            id.local_world_size = world;
            id.world_size = world;
            id.group_world_size = 1;
            id.role_world_size = world;
            id.master_addr = store.host;
            id.master_port = store.port;
            id.restart_count = attempt;
            id.max_restarts = config.max_restarts;
            id.run_id = config.run_id;
            id.use_agent_store = store.agent_hosted;
            id.error_file = w.end.error_file;
            SpawnRequest req{command.exec_path, command.argv, env::worker_env(id, parent_env)};
            auto out = plumb(StdMask::Out, attempt, lr, w.end.rank, STDOUT_FILENO);
            auto err = plumb(StdMask::Err, attempt, lr, w.end.rank, STDERR_FILENO);
            req.stdout_fd = out.child_fd;
            req.stderr_fd = err.child_fd;
            w.end.stderr_log = err.log_path;
            state.alive += 1;
            try {
                w.end.pid = spawn_worker(req);
                w.alive = true;
            } catch (const SpawnError& e) {
                log->error("local rank {}: {}", lr, e.what());
                w.end.exit = WorkerExit{127, 0};
                w.end.time = std::chrono::system_clock::now();
                asio::post(io, [this, lr] { apply(WorkerExited{lr, WorkerExit{127, 0}}); });
            }
            if (out.child_fd >= 0) ::close(out.child_fd);
            if (err.child_fd >= 0) ::close(err.child_fd);
        }
    }
};

Agent::Agent(const LaunchConfig& config, WorkerCommand command, env::EnvMap parent_env, StoreEndpoint store,
             std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>(config, std::move(command), std::move(parent_env), std::move(store),
                                   std::move(logger))) {}

Agent::~Agent() = default;

int Agent::run() { return impl_->run(); }

}  // namespace ptrun::launcher
