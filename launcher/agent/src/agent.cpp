#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <csignal>
#include <system_error>

#include "agent_impl.hpp"
#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/membership/root_cause_claim.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/output/failure_report.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/process/containment.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/launcher/process/process_launcher.hpp"
#include "ptrun/launcher/process/process_sweep.hpp"
#include "ptrun/progress/heartbeat_file.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

int Agent::Impl::run() {
    if (auto warning = logs.prepare(); !warning.empty()) log->warn("{}", warning);
    open_run_log();
    if (!config.log_dir.empty()) log->info("worker logs and error files: {}", logs.run_log_dir());
    if (env::sets_omp_num_threads(parent_env, config.nproc_per_node)) {
        log->info(
            "setting OMP_NUM_THREADS=1 for each worker to avoid overloading the system; "
            "set it yourself to tune performance");
    }
    open_timeline();
    launcher->open(io, [this](const ChildChange& change) { on_child(change); });
    start_preload();  // imports while the rendezvous runs
    if (!open_watch()) {
        finish(1);
        return exit_code;
    }
    if (!may_open_run_log()) console->run_log.discard();  // lines are not stamped for nothing
    signals.add(SIGCONT);  // `fg` of ptrun: a worker waiting for the terminal may have it now
    for (int s : config.signals_to_handle) signals.add(s);
    wait_signal();
    watch_launcher();
    if (rounds) {
        start_store_at_first_connection();
        record(Phase::RendezvousJoin, -1);
        rounds->join();
    } else {
        start_attempt();
        // After the spawns: a worker connects once it runs, into the listening socket's backlog,
        // and the loop below is the first to look.
        if (!finished) start_store_at_first_connection();
    }
    if (!finished) io.run();
    return exit_code;
}

void Agent::Impl::start_store_at_first_connection() {
    if (!store.start) return;
    auto start = [this] {
        store_listener.reset();
        try {
            store.start();
        } catch (const std::system_error& e) {  // the system refused its thread
            log->error("{}", errno_message("cannot serve the workers' store", e.code().value()));
            finish(1);  // its workers could only wait for it
        }
    };
    const int fd = ::fcntl(store.listening_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {  // no descriptor to watch it with: it serves from now on
        start();
        return;
    }
    store_listener.emplace(io, fd);
    store_listener->async_wait(asio::posix::stream_descriptor::wait_read,
                               [start](boost::system::error_code ec) {
                                   if (ec != asio::error::operation_aborted) start();
                               });
}

bool Agent::Impl::may_open_run_log() const {
    // A run directory comes with --log-dir, a log file (--redirects, --tee, filters, a filtered
    // rank's output) or the watchdog's stack files of a hang report.
    if (!config.log_dir.empty() || watch || !config.stdout_filters.empty() ||
        !config.stderr_filters.empty()) {
        return true;
    }
    for (int lr = 0; lr < config.nproc_per_node; ++lr) {
        for (auto stream : {StdMask::Out, StdMask::Err}) {
            if (route_of(stream, lr).to_file) return true;
        }
    }
    return false;
}

void Agent::Impl::open_run_log() {
    if (run_log_opened || logs.run_log_dir().empty()) return;  // no run directory (yet)
    run_log_opened = true;
    const std::string path = logs.run_log_dir() + "/" + kRunLogName;
    if (auto why = console->run_log.open(path); !why.empty()) {
        log->warn("cannot write the run log {}: {}", path, why);
    }
}

void Agent::Impl::wait_signal() {
    signals.async_wait([this](boost::system::error_code ec, int signo) {
        if (ec || finished) return;
        if (signo == SIGCONT) {
            // ptrun itself was stopped until now: that time never counts against a worker.
            if (watch) watch->watching_since = std::chrono::steady_clock::now();
            lend_terminal();
        } else if (signo == SIGINT && copy_of_last_interrupt()) {
            log->info("received SIGINT again within {} ms: the same Ctrl-C, delivered twice",
                      kSameInterrupt.count());
        } else {
            log->info("{}", signal_notice(signo));
            apply(signal_event(signo));
        }
        if (!finished) wait_signal();
    });
}

bool Agent::Impl::copy_of_last_interrupt() {
    const auto now = std::chrono::steady_clock::now();
    if (last_interrupt && now - *last_interrupt < kSameInterrupt) return true;
    last_interrupt = now;
    return false;
}

std::string Agent::Impl::signal_notice(int signo) const {
    if (auto checkpoint = checkpoint_notice(signo); !checkpoint.empty()) return checkpoint;
    const std::string got = "received " + signal_name(signo);
    if (!stops_job(signo)) return got + ": forwarding it to the workers";
    if (state.alive == 0) return got + ": stopping";
    if (signo == SIGINT && state.interrupts >= 1)
        return got + " again: killing the workers now (SIGKILL)";
    if (state.stopping) return got + ": forwarding it to the workers, which are already stopping";
    std::string text = got + ": stopping the workers: they get " + signal_name(signo) +
                       ", then SIGKILL after " + seconds_text(config.shutdown_timeout) +
                       " (--shutdown-timeout)";
    if (signo == SIGINT) text += "; press Ctrl-C again to kill them at once";
    return text;
}

void Agent::Impl::on_child(const ChildChange& change) {
    if (finished) return;
    for (auto& w : workers) {
        if (!w.alive || w.end.pid != change.pid) continue;
        if (change.kind == ChildChange::Kind::Continued) {
            w.stopped = false;
            status_changed();
            return;
        }
        if (change.kind == ChildChange::Kind::Stopped) {
            if (!w.stopped) w.stopped_at = std::chrono::steady_clock::now();
            w.stop_signal = change.stop_signal;
            on_stopped(w, change.stop_signal);
            status_changed();
            return;
        }
        w.alive = false;
        w.exited_at = std::chrono::steady_clock::now();
        record(Phase::Exit, w.end.rank, describe(change.exit));
        if (watch) watch->timers.forget_pid(change.pid);
        for (const auto& path : w.direct_logs) log_health.check_full(path);
        w.stopped = false;
        w.end.exit = change.exit;
        w.end.usage = change.usage;
        w.end.time = std::chrono::system_clock::now();
        usage_ended(w, ended_cell(w.end.exit, w.end.usage, w.end.stopped_by_ptrun));
        const bool held_terminal = reclaim_terminal(w);
        if (held_terminal && (w.end.exit.signal == SIGINT || w.end.exit.code == 128 + SIGINT)) {
            // Ctrl-C reached the worker holding the terminal, not ptrun: stop the job as
            // ptrun's own Ctrl-C would (not a failure to restart from).
            log->info("{}, which had the terminal, was interrupted (Ctrl-C): stopping the job",
                      who(w));
            if (!copy_of_last_interrupt()) apply(SignalReceived{SIGINT, true});
        }
        apply(WorkerExited{w.slot, w.end.exit});
        if (!finished && w.end.exit.succeeded()) watch_stragglers();
        if (!finished && held_terminal) lend_terminal();
        return;
    }
}

void Agent::Impl::apply(const Event& ev) {
    Decision d = decide(state, policy, ev);
    if (d.first_failure) {
        root_cause = workers[static_cast<std::size_t>(d.first_failure->local_rank)].end;
        last_failure = failure_line(*root_cause) + " at " + utc_text(root_cause->time);
        record(Phase::Failure, -1, failure_line(*root_cause));
        // A worker replaced alone is no failure of the round: the other nodes keep running.
        if (rounds && d.action.kind != ActionKind::ReplaceWorker) {
            rounds->report_failure(*root_cause);
        }
    }
    if (d.recovery_fallback) {
        log->warn("{}; falling back to a group restart", recovery_why);
        recovery_replaced.clear();
        if (recovery_cause) root_cause = recovery_cause;
        recovery_cause.reset();
        // Multi-node: the round fails with the replaced worker's failure; every node restarts.
        if (rounds && root_cause) rounds->report_failure(*root_cause);
    }
    state = d.next;
    act(d.action);
}

void Agent::Impl::act(const Action& a) {
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
                log->warn(
                    "workers still running {} after the stop signal (--shutdown-timeout); "
                    "sending SIGKILL",
                    seconds_text(config.shutdown_timeout));
                apply(GraceExpired{});
            });
            return;
        case ActionKind::KillGroup:
            signal_alive(SIGKILL, true);
            return;
        case ActionKind::RestartGroup:
            announce_restart();
            if (generations) generations->stop();  // the store is wiped: nothing to wait for
            recovery_cause.reset();
            end_attempt();
            if (store.reset) store.reset();
            start_attempt();
            return;
        case ActionKind::ReplaceWorker:
            replace_worker(a.local_rank);
            return;
        case ActionKind::Checkpoint:
            start_checkpoint(a.signo);
            return;
        case ActionKind::Finish:
            finish(a.exit_code);
            return;
        case ActionKind::ReportSuccess:
            rounds->report_success();
            return;
        case ActionKind::Rejoin:
            // The next round's workers' store is wiped (or hosted elsewhere): a new board then.
            generations.reset();
            recovery_cause.reset();
            recovery_replaced.clear();
            end_attempt();
            root_cause.reset();
            add_event(timeline,
                      {progress::monotonic_now_ns(), state.restart_count + 1, -1,
                       Phase::RendezvousJoin, "after round " + std::to_string(placement.round)});
            rounds->join();
            return;
    }
}

void Agent::Impl::start_round(const NodePlacement& a) {
    if (finished) return;
    placement = a;
    state.restart_count = a.restart_count;
    record(Phase::RoundClosed, -1, "round " + std::to_string(a.round));
    if (a.replacement && !take_lost_place()) return;
    start_attempt();
}

void Agent::Impl::signal_alive(int signo, bool by_ptrun) {
    for (auto& w : workers) {
        if (!w.alive) continue;
        if (w.fork) {  // the zygote has not forked it: a stop drops it, nothing else reaches it
            if (by_ptrun) drop_fork(w.slot, signo);
            continue;
        }
        if (by_ptrun) w.end.stopped_by_ptrun = true;
        if (signo == SIGABRT) {
            // Only the worker itself, core dumps off: its faulthandler prints every thread
            // (a hang, agent_watchdog.cpp); what else runs in its group goes with the attempt.
            watchdog::send_traceback_signal(w.end.pid);
        } else {
            launcher->signal_group(w.end.pid, signo);
        }
        if (w.stopped && by_ptrun && signo != SIGKILL) {
            // A stopped worker (waiting for the terminal) acts on the stop signal only once
            // continued: without this it would take the whole grace period.
            w.stopped = false;
            launcher->signal_group(w.end.pid, SIGCONT);
        }
    }
}

void Agent::Impl::announce_restart() {
    std::string cause = "a worker failed";  // decide() always names the failure; never stay silent
    if (root_cause) cause = failure_line(*root_cause);
    record(Phase::Restart, -1, cause);
    log->warn("{}; restarting the worker group (restart {} of {})", cause, restarts_used(state),
              policy.max_restarts);
    if (watch) {
        watch->outcome = "restarting the worker group (restart " +
                         std::to_string(restarts_used(state)) + " of " +
                         std::to_string(policy.max_restarts) + ")";
    }
    root_cause.reset();
}

void Agent::Impl::watch_stragglers() {
    if (state.stopping || state.alive == 0 ||
        first_success != std::chrono::steady_clock::time_point{})
        return;
    first_success = std::chrono::steady_clock::now();
    const auto every = config.straggler_notice;
    straggler.expires_after(every);
    straggler.async_wait([this, every](boost::system::error_code ec) {
        if (!ec && !finished) announce_stragglers(every * 2);
    });
}

void Agent::Impl::announce_stragglers(std::chrono::seconds next) {
    if (state.stopping || state.alive == 0) return;
    int succeeded = 0;
    std::string running;
    int listed = 0;
    for (const auto& w : workers) {
        if (!w.alive) {
            succeeded += w.end.exit.succeeded() ? 1 : 0;
            continue;
        }
        if (listed++ < 3) {
            running += (running.empty() ? "" : ", ") + std::string("rank ") +
                       std::to_string(w.end.rank) + " (pid " + std::to_string(w.end.pid) + ")";
        }
    }
    if (listed > 3) running += " and " + std::to_string(listed - 3) + " more";
    auto waited = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - first_success);
    log->warn("{}/{} workers exited 0; still waiting on {} for {}", succeeded, workers.size(),
              running, elapsed_text(waited));
    straggler.expires_after(next);
    straggler.async_wait([this, next](boost::system::error_code ec) {
        if (!ec && !finished) announce_stragglers(next * 2);
    });
}

void Agent::Impl::end_attempt() {
    grace.cancel();
    checkpoint_grace.cancel();
    straggler.cancel();
    first_success = {};
    for (auto& w : workers) cancel_fork(w);  // no answer of the zygote's reaches an attempt over
    for (auto& w : workers) {
        if (w.alive && w.end.pid > 0) usage_ended(w, "killed with its attempt (SIGKILL)");
    }
    launcher->end_attempt();  // every worker's group, the cgroup, every child ptrun inherited
    for (auto& r : relays) r->drain();
    relays.clear();
    if (watch) end_watch_attempt();
}

void Agent::Impl::finish(int code) {
    if (watch) {
        watch->outcome = "the job ends with exit code " + std::to_string(code) +
                         (code == kExitHung ? " (hung)" : "");
    }
    if (generations) generations->stop();
    end_attempt();
    exit_code = code;
    finished = true;
    followers.ended(code);  // after the relays' last lines: a follower reads them, then the code
    record(Phase::Exit, -1, "ptrun exits with code " + std::to_string(code));
    publish_timeline();  // before leaving: the store host writes the job's trace after its drain
    publish_status();    // the final states, which the store host shows until it ends
    status_publish.cancel();
    launcher->close();
    if (rounds) rounds->leave(code, state.stop_signal, state.checkpoint_signal != 0);
    if (timeline_inbox) timeline_inbox->on_change(nullptr);  // the loop is done: no more checks
    write_trace();
    if (state.checkpoint_signal) report_checkpoint();
    if (root_cause && root_cause->hung) {
        // end_watch_attempt printed the hang report (who stopped first, where every rank was).
    } else if (root_cause && !state.stop_signal) {
        std::vector<WorkerEnd> others;
        for (const auto& w : workers) {
            if (w.end.pid != root_cause->pid) others.push_back(w.end);
        }
        ReportContext context{restarts_used(state), policy.max_restarts, logs.error_files_kept(),
                              command.interpreter, command.interpreter_origin};
        // One task per rank: the job's root cause is whichever rank's ptrun claimed it first.
        const std::string first =
            local.scheduled
                ? claim_root_cause(config, *local.scheduled, failure_line(*root_cause, true))
                : "";
        console->say(first.empty() ? format_failure_report(*root_cause, others, context)
                                   : format_later_failure_report(*root_cause, first, context));
    } else if (rounds && !state.stop_signal && !launcher_pipe) {
        // No local failure explains the code: the rendezvous ended the job.
        if (auto line = rounds->end_report(code); !line.empty()) console->say(line);
    }
    say_usage_table();
    // A failure report names the worker's log files: they stay.
    if (auto kept = logs.settle_temporary_logs(!root_cause); !kept.empty()) {
        log->info("worker logs kept in {} (no --log-dir: remove it when done)", kept);
    }
    boost::system::error_code ignored;
    signals.cancel(ignored);
    stop_loop();
}

Agent::Agent(const LaunchConfig& config, WorkerCommand command, LocalPlacement local,
             env::EnvMap parent_env, StoreEndpoint store, std::shared_ptr<spdlog::logger> logger,
             std::optional<Membership> membership, std::shared_ptr<Console> console,
             std::unique_ptr<WorkerLauncher> launcher) {
    if (!launcher) {
        auto options = containment_options(config.run_id, parent_env);
        options.memory_limit_per_worker = config.memory_limit_per_worker;
        launcher = std::make_unique<ProcessLauncher>(
            std::move(options), env::lookup(parent_env, kJobTagVariable).value_or(""), logger);
    }
    impl_ = std::make_unique<Impl>(config, std::move(command), std::move(local),
                                   std::move(parent_env), std::move(store), std::move(logger),
                                   std::move(membership), std::move(launcher),
                                   console ? std::move(console) : std::make_shared<Console>());
}

Agent::~Agent() = default;

void Agent::serve_health_on(sys::Fd listener) { impl_->serve_health_on(std::move(listener)); }

void Agent::watch_launcher_pipe(sys::Fd pipe) { impl_->watch_launcher_pipe(std::move(pipe)); }

int Agent::run() { return impl_->run(); }

bool Agent::checkpointed() const { return impl_->checkpointed(); }

std::chrono::steady_clock::time_point Agent::checkpoint_started() const {
    return impl_->checkpoint_started();
}

}  // namespace ptrun::launcher
