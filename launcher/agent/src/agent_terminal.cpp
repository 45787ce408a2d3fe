#include <csignal>

#include "agent_impl.hpp"

namespace ptrun::launcher {

std::string Agent::Impl::who(const Worker& w) {
    return "worker rank " + std::to_string(w.end.rank) + " (local rank " +
           std::to_string(w.end.local_rank) + ", pid " + std::to_string(w.end.pid) + ")";
}

void Agent::Impl::on_stopped(Worker& w, int signo) {
    w.stopped = true;
    if (signo == SIGTSTP && terminal.holder() == w.end.pid) {
        // Ctrl-Z while a worker holds the terminal: ptrun takes it back (Ctrl-C reaches ptrun
        // again) and the worker goes on in the background; the next worker waiting gets it.
        terminal.reclaim(w.end.pid);
        terminal_returned();
        w.stopped = false;
        log->info("Ctrl-Z: ptrun took the terminal back from {}, which goes on in the background",
                  who(w));
        launcher->signal_group(w.end.pid, SIGCONT);
        lend_terminal();
        return;
    }
    if (signo != SIGTTIN && signo != SIGTTOU) {
        log->warn("{} is stopped by {}; ptrun waits for it (kill -CONT {} resumes it)", who(w),
                  signal_name(signo), w.end.pid);
        return;
    }
    for (int queued : terminal_queue) {
        if (queued == w.slot) return;  // already waiting
    }
    terminal_queue.push_back(w.slot);
    if (terminal.holder() != 0) {
        log->info(
            "{} wants the terminal ({}); it gets it when the worker holding it exits, or on Ctrl-Z",
            who(w), signal_name(signo));
        return;
    }
    lend_terminal();
    if (w.stopped) {
        log->warn(
            "{} is stopped: it wants the terminal ({}), which ptrun does not hold (it runs in the "
            "background?); `fg` ptrun to let the worker have it",
            who(w), signal_name(signo));
    }
}

void Agent::Impl::lend_terminal() {
    while (!terminal_queue.empty() && terminal.holder() == 0) {
        auto& w = workers[static_cast<std::size_t>(terminal_queue.front())];
        if (!w.alive || !w.stopped) {
            terminal_queue.pop_front();
            continue;
        }
        if (terminal.lend(w.end.pid) != TerminalLender::Outcome::Lent) return;
        terminal_queue.pop_front();
        w.stopped = false;
        log->info(
            "{} reads the terminal: it has it now (Ctrl-C goes to it; Ctrl-Z gives the terminal "
            "back to ptrun)",
            who(w));
        launcher->signal_group(w.end.pid, SIGCONT);  // after the note: whole before its prompt
    }
}

bool Agent::Impl::reclaim_terminal(const Worker& w) {
    const bool reclaimed = terminal.reclaim(w.end.pid);
    if (reclaimed) terminal_returned();
    return reclaimed;
}

void Agent::Impl::terminal_returned() {
    // The hang clock paused while a worker held the terminal (a pdb session, input()): every
    // worker's silence counts from now, not from before the session.
    if (watch && config.hang_timeout) watch->watching_since = std::chrono::steady_clock::now();
}

}  // namespace ptrun::launcher
