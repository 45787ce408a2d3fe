#include "ptrun/launcher/decide.hpp"

#include <csignal>

namespace ptrun::launcher {
namespace {

/// The whole group has exited while stopping: restart, or finish with the right code.
Action settle(GroupState& s, const RestartPolicy& policy) {
    if (s.stop_signal) return {ActionKind::Finish, 0, 128 + s.stop_signal};
    if (s.failure && s.restart_count < policy.max_restarts) {
        s.restart_count += 1;
        s.failure.reset();
        s.stopping = false;
        return {ActionKind::RestartGroup, 0, 0};
    }
    return {ActionKind::Finish, 0, s.failure ? s.failure->exit.shell_code() : 0};
}

Decision on_exit(GroupState s, const RestartPolicy& policy, const WorkerExited& ev) {
    s.alive -= 1;
    if (!s.stopping && !ev.exit.succeeded()) {
        s.failure = Failure{ev.local_rank, ev.exit};
        s.stopping = true;
        if (s.alive > 0) return {s, {ActionKind::TerminateGroup, SIGTERM, 0}};
    }
    if (s.alive > 0) return {s, {}};
    if (!s.stopping) return {s, {ActionKind::Finish, 0, 0}};
    Action a = settle(s, policy);
    return {s, a};
}

Decision on_signal(GroupState s, const SignalReceived& ev) {
    if (!ev.terminate) return {s, {ActionKind::Forward, ev.signo, 0}};
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
    if (state.stopping && state.alive > 0) return {state, {ActionKind::KillGroup, SIGKILL, 0}};
    return {state, {}};
}

}  // namespace ptrun::launcher
