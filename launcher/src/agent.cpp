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
#include "ptrun/launcher/fixed_placement.hpp"
#include "ptrun/launcher/log_layout.hpp"
#include "ptrun/launcher/node_placement.hpp"
#include "ptrun/launcher/output_relay.hpp"
#include "ptrun/launcher/coordinator.hpp"
#include "ptrun/launcher/rdzv_session.hpp"
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
    Impl(const LaunchConfig& c, WorkerCommand cmd, env::EnvMap e, StoreEndpoint s, std::shared_ptr<spdlog::logger> l,
         std::optional<Membership> m)
        : config(c), command(std::move(cmd)), parent_env(std::move(e)), store(std::move(s)), log(std::move(l)),
          membership(std::move(m)), signals(io), grace(io), logs(c.log_dir, c.run_id) {
        policy.max_restarts = c.max_restarts;
        state.distributed = membership.has_value();
        placement.group_rank = c.node_rank;
        placement.nodes = 1;
        placement.rank_base = c.node_rank * c.nproc_per_node;
        placement.world_size = c.nproc_per_node;
        placement.master_addr = store.host;
        placement.master_port = store.port;
    }

    const LaunchConfig& config;
    WorkerCommand command;
    env::EnvMap parent_env;
    StoreEndpoint store;
    std::shared_ptr<spdlog::logger> log;
    std::optional<Membership> membership;
    NodePlacement placement;  ///< this node's place in the job for the current attempt
    std::optional<RoundEnd> last_round_end;  ///< multi-node: how the running round ended
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
        if (membership) {
            join_round();
        } else {
            start_attempt();
        }
        if (!finished) io.run();
        return exit_code;
    }

    // ---- multi-node: rounds come from the rendezvous session (on its threads; posted here) ----

    void join_round() {
        membership->session->join(
            [this](NodePlacement p) { asio::post(io, [this, p = std::move(p)] { start_round(p); }); },
            [this](RendezvousError e) {
                asio::post(io, [this, e] {
                    if (finished) return;
                    log->error("{}", e.what());
                    finish(e.exit_code);
                });
            });
    }

    void start_round(const NodePlacement& a) {
        if (finished) return;
        placement = a;
        state.restart_count = a.restart_count;
        last_round_end.reset();
        log->info("round {}: group rank {} of {} node(s), ranks {}..{} of world size {}, restart {} of {}", a.round,
                  a.group_rank, a.nodes, placement.rank_base, placement.rank_base + config.nproc_per_node - 1,
                  placement.world_size, a.restart_count, config.max_restarts);
        membership->session->watch(
            a.round,
            [this](RoundEnd end) { asio::post(io, [this, end] { on_round_end(end); }); },
            [this](std::string message) { asio::post(io, [this, message] { on_store_lost(message); }); });
        start_attempt();
    }

    void on_round_end(const RoundEnd& end) {
        if (finished) return;
        last_round_end = end;
        if (end.reason != EndReason::Complete) {
            log->warn("round {} ended: {}{}", placement.round, end.message,
                      end.final ? "" : "; stopping the workers to re-form the group");
        }
        apply(RoundEnded{end.final, end.final ? end.exit_code : 0});
    }

    void on_store_lost(const std::string& message) {
        if (finished) return;
        log->error("{}; stopping the workers", message);
        last_round_end = RoundEnd{EndReason::Error, true, 1, "", -1, message};
        apply(RoundEnded{true, 1});
    }

    void report_local_failure() {
        if (!membership || !root_cause) return;
        RoundEnd end{EndReason::Failure, false, root_cause->exit.shell_code(), config.hostname, root_cause->rank,
                     "worker rank " + std::to_string(root_cause->rank) + " (local rank " +
                         std::to_string(root_cause->local_rank) + ") on " + config.hostname + " failed: " +
                         describe(root_cause->exit)};
        membership->session->report_failure(placement.round, end);
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
            report_local_failure();
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
            case ActionKind::ReportSuccess:
                log->info("every local worker succeeded; waiting for the other nodes");
                membership->session->report_success(placement.round);
                return;
            case ActionKind::Rejoin:
                end_attempt();
                root_cause.reset();
                join_round();
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
        if (membership) leave(code);
        if (root_cause && !state.stop_signal) {
            std::vector<WorkerEnd> others;
            for (const auto& w : workers) {
                if (w.end.pid != root_cause->pid) others.push_back(w.end);
            }
            auto report = format_failure_report(*root_cause, others, state.restart_count, policy.max_restarts);
            write_all(STDERR_FILENO, report.data(), report.size());
        }
        else if (last_round_end && last_round_end->final && code != 0 && !last_round_end->message.empty() &&
                 !state.stop_signal) {
            std::string line = "ptrun: job failed: " + last_round_end->message + "\n";
            write_all(STDERR_FILENO, line.data(), line.size());
        }
        boost::system::error_code ignored;
        signals.cancel(ignored);
        io.stop();
    }

    /// Multi-node: tells the coordinator this agent is leaving; the store host waits (at most
    /// close_timeout) until every other node has left before its store goes away.
    void leave(int code) {
        std::string why = state.stop_signal ? "stopped by " + signal_name(state.stop_signal)
                                            : "exiting with code " + std::to_string(code);
        membership->session->report_leaving(placement.round, why);
        const bool job_over = last_round_end && last_round_end->final;
        if (membership->coordinator && job_over &&
            !membership->coordinator->wait_drained(membership->self_id, membership->close_timeout)) {
            log->warn("not every node left within close_timeout ({} ms); stopping the store anyway",
                      membership->close_timeout.count());
        }
        membership->session->stop();
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
        const auto& p = placement;
        for (int lr = 0; lr < world; ++lr) {
            auto& w = workers[static_cast<std::size_t>(lr)];
            w.end.host = config.hostname;
            w.end.local_rank = lr;
            w.end.rank = p.rank_base + lr;
            w.end.error_file = logs.error_dir(attempt, lr) + "/error.json";
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
            id.restart_count = attempt;
            id.max_restarts = config.max_restarts;
            id.run_id = config.run_id;
            id.use_agent_store = store.agent_hosted;
            id.error_file = w.end.error_file;
            if (config.fixed_placement) apply_placement(*config.fixed_placement, id);  // SLURM per-rank
            w.end.rank = id.rank;
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
             std::shared_ptr<spdlog::logger> logger, std::optional<Membership> membership)
    : impl_(std::make_unique<Impl>(config, std::move(command), std::move(parent_env), std::move(store),
                                   std::move(logger), std::move(membership))) {}

Agent::~Agent() = default;

int Agent::run() { return impl_->run(); }

}  // namespace ptrun::launcher
