// --checkpoint-signal: ptrun forwards the checkpoint signal, gives the workers --checkpoint-grace
// to save and exit, then stops the rest as on SIGTERM (decide.cpp holds the decisions).
#include "agent_impl.hpp"
#include "ptrun/launcher/output/checkpoint_report.hpp"
#include "ptrun/launcher/output/duration_text.hpp"

namespace ptrun::launcher {

SignalReceived Agent::Impl::signal_event(int signo) const {
    const int checkpoint = config.checkpoint_signal;
    if (checkpoint != 0 && (signo == checkpoint || signo == SIGTERM)) {
        return SignalReceived{signo, true, checkpoint};
    }
    return SignalReceived{signo, stops_job(signo)};
}

std::string Agent::Impl::checkpoint_notice(int signo) const {
    const int checkpoint = config.checkpoint_signal;
    if (checkpoint == 0 || state.alive == 0) return "";
    const std::string got = "received " + signal_name(signo);
    if (state.checkpoint_anticipated && (signo == checkpoint || signo == SIGTERM)) {
        return got + ": the workers already have " + signal_name(state.checkpoint_signal) +
               " (another node's checkpoint ended the round); still giving them until "
               "--checkpoint-grace runs out";
    }
    if (state.checkpoint_pending && signo == state.checkpoint_signal) {
        return got + " again: forwarding it to the workers, which are checkpointing";
    }
    if (state.checkpoint_pending) {
        return got + " while the workers checkpoint: stopping them now: they get " +
               signal_name(signo) + ", then SIGKILL after " +
               seconds_text(config.shutdown_timeout) + " (--shutdown-timeout)";
    }
    if (state.stopping || (signo != checkpoint && signo != SIGTERM)) return "";
    return got + ": sending " + signal_name(checkpoint) +
           " to the workers (--checkpoint-signal); they have " +
           seconds_text(config.checkpoint_grace) +
           " (--checkpoint-grace) to exit, then the rest are stopped";
}

void Agent::Impl::start_checkpoint(int signo) {
    signal_alive(signo, false);
    checkpoint_sent = std::chrono::steady_clock::now();
    checkpoint_grace.expires_after(config.checkpoint_grace);
    checkpoint_grace.async_wait([this](boost::system::error_code ec) {
        if (ec || finished) return;
        log->warn("workers still running {} after {} (--checkpoint-grace); stopping them",
                  seconds_text(config.checkpoint_grace), signal_name(state.checkpoint_signal));
        apply(CheckpointGraceExpired{});
    });
}

void Agent::Impl::report_checkpoint() {
    std::vector<WorkerEnd> ends;
    bool stopped = false;
    for (const auto& w : workers) {
        if (w.end.pid <= 0 && !w.end.stopped_by_ptrun) continue;  // never started
        ends.push_back(w.end);
        stopped = stopped || w.end.stopped_by_ptrun;
    }
    const auto text =
        format_checkpoint_report(ends, state.checkpoint_signal, config.checkpoint_grace);
    if (stopped) {
        log->warn("{}", text);
    } else {
        log->info("{}", text);
    }
}

}  // namespace ptrun::launcher
