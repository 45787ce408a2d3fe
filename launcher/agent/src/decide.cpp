#include "ptrun/launcher/agent/decide.hpp"

#include <csignal>

namespace ptrun::launcher {
namespace {

/// Multi-node: the local workers are gone; the round's end says whether the job is over. An
/// agent never reports a success it did not see: a final end with code 0 ends this node with
/// kExitUnseenSuccess unless every local worker of the round exited 0.
Action settle_distributed(GroupState& s) {
    if (s.stop_signal) return {ActionKind::Finish, 0, 128 + s.stop_signal};
    if (!s.round_end) return {};  // our failure is reported; wait for the round to end
    if (s.round_end->final) {
        const int code = s.round_end->exit_code;
        const bool unseen = code == 0 && !s.reported_success;
        return {ActionKind::Finish, 0, unseen ? kExitUnseenSuccess : code};
    }
    s.failure.reset();
    s.stopping = false;
    s.reported_success = false;
    s.round_end.reset();
    s.generation = 0;  // the next round's workers start in generation 0 of a wiped store
    s.recovering.reset();
    return {ActionKind::Rejoin, 0, 0};
}

/// The whole group has exited while stopping: restart, or finish with the right code.
Action settle(GroupState& s, const RestartPolicy& policy) {
    if (s.distributed) return settle_distributed(s);
    if (s.stop_signal) return {ActionKind::Finish, 0, 128 + s.stop_signal};
    if (s.failure && restarts_used(s) < policy.max_restarts) {
        s.restart_count += 1;
        s.failure.reset();
        s.stopping = false;
        s.generation = 0;
        s.recovering.reset();
        return {ActionKind::RestartGroup, 0, 0};
    }
    if (s.failure && s.failure->hung) return {ActionKind::Finish, 0, kExitHung};
    return {ActionKind::Finish, 0, s.failure ? s.failure->exit.shell_code() : 0};
}

Decision on_exit(GroupState s, const RestartPolicy& policy, const WorkerExited& ev) {
    s.alive -= 1;
    std::optional<Failure> first;
    if (!s.stopping && !ev.exit.succeeded() && policy.replace_failed &&
        restarts_used(s) < policy.max_restarts) {
        // Recovery in place: only this worker starts again; the survivors (on every node) keep
        // running and join the next generation (a replacement during a recovery supersedes it).
        // Multi-node: not reported to the round; the agent numbers the generation job-wide.
        first = Failure{ev.local_rank, ev.exit};
        s.replacements += 1;
        s.generation += 1;
        s.recovering = first;  // the replacement counts as alive once spawned
        Action a{ActionKind::ReplaceWorker, 0, 0, ev.local_rank};
        return {s, a, first};
    }
    if (!s.stopping && !ev.exit.succeeded()) {
        s.failure = first = Failure{ev.local_rank, ev.exit};
        s.stopping = true;
        if (s.alive > 0) return {s, {ActionKind::TerminateGroup, SIGTERM, 0}, first};
    }
    if (s.alive > 0) return {s, {}};
    if (!s.stopping && s.distributed) {
        s.reported_success = true;
        if (!s.round_end) return {s, {ActionKind::ReportSuccess, 0, 0}};
        Action a = settle_distributed(s);
        return {s, a};
    }
    if (!s.stopping) return {s, {ActionKind::Finish, 0, 0}};
    Action a = settle(s, policy);
    return {s, a, first};
}

/// A hung worker is a failure like an exit, found while the worker still runs.
Decision on_hang(GroupState s, const RestartPolicy& policy, const HangDetected& ev) {
    if (s.stopping) return {s, {}};  // already ending for another cause
    std::optional<Failure> first = Failure{ev.local_rank, {}, true};
    s.failure = first;
    s.stopping = true;
    if (s.alive > 0) return {s, {ActionKind::TerminateGroup, ev.signo, 0}, first};
    Action a = settle(s, policy);
    return {s, a, first};
}

Decision on_round_end(GroupState s, const RoundEnded& ev) {
    if (!s.round_end) s.round_end = ev;
    if (s.alive > 0) {
        if (s.stopping) return {s, {}};
        s.stopping = true;
        if (ev.checkpoint != 0) {
            // Another node is being preempted and checkpointed: so do these workers, as on this
            // node's own checkpoint signal, and the job ends with the round's code.
            s.checkpoint_signal = ev.checkpoint;
            s.checkpoint_pending = true;
            s.checkpoint_anticipated = true;
            return {s, {ActionKind::Checkpoint, ev.checkpoint, 0}};
        }
        return {s, {ActionKind::TerminateGroup, SIGTERM, 0}};
    }
    if (!s.stopping && !s.reported_success) return {s, {}};  // no attempt running (joining)
    Action a = settle_distributed(s);
    return {s, a};
}

/// A recovery in place ended: joined, it is over; timed out (and still the running one), the
/// group stops and restarts as under --restart-policy group, its failure the replaced worker's;
/// the replacement's restart becomes that group restart (counted once).
Decision on_recovery(GroupState s, const RecoveryEnded& ev) {
    if (!s.recovering || ev.generation != s.generation || s.stopping) return {s, {}};
    if (ev.joined) {
        s.recovering.reset();
        return {s, {}};
    }
    s.failure = s.recovering;
    s.recovering.reset();
    s.replacements -= 1;
    s.stopping = true;
    Decision d{s, {ActionKind::TerminateGroup, SIGTERM, 0}};
    d.recovery_fallback = true;
    return d;
}

/// --checkpoint-signal: a first stop request sends the checkpoint signal and waits the grace;
/// during it the checkpoint signal again is only forwarded, any other stop signal stops the
/// workers as without --checkpoint-signal.
std::optional<Decision> on_checkpoint_signal(GroupState& s, const SignalReceived& ev) {
    if (s.alive == 0) return std::nullopt;
    if (ev.checkpoint != 0 && s.checkpoint_anticipated) {
        s.checkpoint_anticipated = false;  // this node's own notice: the workers already have it
        return Decision{s, {}};
    }
    if (ev.checkpoint != 0 && !s.stopping) {
        s.stop_signal = ev.signo;
        s.stopping = true;
        s.checkpoint_signal = ev.checkpoint;
        s.checkpoint_pending = true;
        return Decision{s, {ActionKind::Checkpoint, ev.checkpoint, 0}};
    }
    if (!s.checkpoint_pending) return std::nullopt;
    if (ev.signo == s.checkpoint_signal) return Decision{s, {ActionKind::Forward, ev.signo, 0}};
    s.checkpoint_pending = false;
    if (ev.signo == SIGINT) s.interrupts += 1;
    return Decision{s, {ActionKind::TerminateGroup, ev.signo, 0}};
}

/// --checkpoint-grace ran out: the workers still running are stopped as on SIGTERM.
Decision on_checkpoint_grace(GroupState s) {
    if (!s.checkpoint_pending || s.alive == 0) return {s, {}};
    s.checkpoint_pending = false;
    return {s, {ActionKind::TerminateGroup, SIGTERM, 0}};
}

Decision on_signal(GroupState s, const SignalReceived& ev) {
    if (!ev.terminate) return {s, {ActionKind::Forward, ev.signo, 0}};
    if (auto d = on_checkpoint_signal(s, ev)) return *d;
    if (ev.signo == SIGINT) s.interrupts += 1;
    if (s.alive == 0) return {s, {ActionKind::Finish, 0, 128 + ev.signo}};
    if (s.interrupts >= 2) return {s, {ActionKind::KillGroup, SIGKILL, 0}};
    bool already_stopping = s.stopping;
    if (s.stop_signal == 0) s.stop_signal = ev.signo;
    s.stopping = true;
    if (already_stopping) return {s, {ActionKind::Forward, ev.signo, 0}};
    return {s, {ActionKind::TerminateGroup, ev.signo, 0}};
}

}  // namespace

Decision decide(const GroupState& state, const RestartPolicy& policy, const Event& ev) {
    if (auto* exited = std::get_if<WorkerExited>(&ev)) return on_exit(state, policy, *exited);
    if (auto* sig = std::get_if<SignalReceived>(&ev)) return on_signal(state, *sig);
    if (auto* end = std::get_if<RoundEnded>(&ev)) return on_round_end(state, *end);
    if (auto* hang = std::get_if<HangDetected>(&ev)) return on_hang(state, policy, *hang);
    if (auto* recovery = std::get_if<RecoveryEnded>(&ev)) return on_recovery(state, *recovery);
    if (std::holds_alternative<CheckpointGraceExpired>(ev)) return on_checkpoint_grace(state);
    if (state.stopping && state.alive > 0) return {state, {ActionKind::KillGroup, SIGKILL, 0}};
    return {state, {}};
}

}  // namespace ptrun::launcher
