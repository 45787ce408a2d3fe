#pragma once
/// The worker group's lifecycle as data plus one pure transition function. The supervisor only
/// reports events; `decide` says what to do next. Every row is covered by a table-driven test.

#include <csignal>
#include <optional>
#include <variant>

#include "ptrun/launcher/process/exit_status.hpp"

namespace ptrun::launcher {

/// The worker whose failure stops an attempt.
struct Failure {
    int local_rank = 0;
    WorkerExit exit;
    bool hung = false;  ///< judged hung by the watchdog (exit: how it ended is not known yet)
    bool operator==(const Failure&) const = default;
};

/// How the running rendezvous round ended (multi-node): the job is over (`final`, with
/// `exit_code`), or the nodes re-form the group in a new round.
struct RoundEnded {
    bool final = false;
    int exit_code = 0;
    bool operator==(const RoundEnded&) const = default;
};

/// What the agent knows about the current attempt of the local worker group.
struct GroupState {
    int alive = 0;                   ///< workers started and not yet reaped
    bool stopping = false;           ///< the group was told to stop and is being waited for
    std::optional<Failure> failure;  ///< the first failure of this attempt
    int stop_signal = 0;             ///< non-zero: ptrun itself was asked to stop by this signal
    int interrupts = 0;              ///< SIGINTs received (the second escalates to SIGKILL)
    int restart_count = 0;           ///< TORCHELASTIC_RESTART_COUNT of this attempt
    /// Multi-node: restarts are decided by the round's end, never locally.
    bool distributed = false;
    bool reported_success = false;  ///< every local worker succeeded; waiting for the round's end
    std::optional<RoundEnded> round_end;  ///< the running round has ended
    bool operator==(const GroupState&) const = default;
};

/// Exit code of a node whose job was declared complete (a final round end with code 0) while its
/// own workers had not all succeeded: a forged or inconsistent end is never reported as success.
inline constexpr int kExitUnseenSuccess = 1;

/// Exit code of a job whose first failure was a hung worker (--hang-timeout, or a stopped worker)
/// once restarts are exhausted: timeout(1)'s code, so schedulers can tell a hang from a crash.
inline constexpr int kExitHung = 124;

/// How many restarts the job may use.
struct RestartPolicy {
    int max_restarts = 0;
};

/// A worker of the group was reaped.
struct WorkerExited {
    int local_rank = 0;
    WorkerExit exit;
};
/// ptrun received a signal; `terminate` says whether it ends the job (INT/TERM/HUP/QUIT) or is
/// only passed on (USR1/USR2).
struct SignalReceived {
    int signo = 0;
    bool terminate = true;
};
/// The grace period between SIGTERM and SIGKILL ran out.
struct GraceExpired {};
/// The watchdog judged local rank `local_rank` hung (its evidence is already captured); `signo`
/// ends the group (SIGABRT for Python workers, whose faulthandler then prints every thread).
struct HangDetected {
    int local_rank = 0;
    int signo = SIGTERM;
};

using Event = std::variant<WorkerExited, SignalReceived, GraceExpired, RoundEnded, HangDetected>;

/// What the supervisor does after an event.
enum class ActionKind {
    None,            ///< keep waiting
    Forward,         ///< send `signo` to every worker group, nothing else
    TerminateGroup,  ///< send `signo` to every worker group and arm the grace timer
    KillGroup,       ///< SIGKILL every worker group now
    RestartGroup,    ///< start the next attempt (state.restart_count is already advanced)
    Finish,          ///< exit ptrun with `exit_code`
    ReportSuccess,   ///< multi-node: tell the coordinator every local worker succeeded
    Rejoin,          ///< multi-node: the workers are gone; join the next rendezvous round
};

struct Action {
    ActionKind kind = ActionKind::None;
    int signo = 0;
    int exit_code = 0;
    bool operator==(const Action&) const = default;
};

struct Decision {
    GroupState next;
    Action action;
    /// The attempt's first failure when this event is it (also when `next` has already moved on
    /// to a restart and no longer holds it): the cause to report and announce.
    std::optional<Failure> first_failure = std::nullopt;
};

/// Pure: the state after `ev` and what the supervisor must do.
Decision decide(const GroupState& state, const RestartPolicy& policy, const Event& ev);

}  // namespace ptrun::launcher
