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
/// `exit_code`), or the nodes re-form the group in a new round. `checkpoint`: non-zero when
/// another node's workers exited on the checkpoint signal (a preemption) and --checkpoint-signal
/// is set here: this node's workers get it and --checkpoint-grace, as on the signal itself.
struct RoundEnded {
    bool final = false;
    int exit_code = 0;
    int checkpoint = 0;
    bool operator==(const RoundEnded&) const = default;
};

/// What the agent knows about the current attempt of the local worker group.
struct GroupState {
    int alive = 0;                   ///< workers started and not yet reaped
    bool stopping = false;           ///< the group was told to stop and is being waited for
    std::optional<Failure> failure;  ///< the first failure of this attempt
    int stop_signal = 0;             ///< non-zero: ptrun itself was asked to stop by this signal
    int interrupts = 0;              ///< SIGINTs received (the second escalates to SIGKILL)
    /// Group restarts so far: the attempt's index, its first workers' TORCHELASTIC_RESTART_COUNT.
    int restart_count = 0;
    /// Multi-node: restarts are decided by the round's end, never locally.
    bool distributed = false;
    bool reported_success = false;  ///< every local worker succeeded; waiting for the round's end
    std::optional<RoundEnded> round_end;  ///< the running round has ended
    /// --restart-policy failed: the generation of the running group (0 at an attempt's start;
    /// decide() advances it by one per replacement and the agent then sets the job-wide number
    /// it allocated, which other nodes' replacements may have advanced further; a replacement's
    /// PTRUN_GENERATION, its TORCHELASTIC_RESTART_COUNT being restart_count + generation).
    int generation = 0;
    /// Replacements over the whole run (each uses one of --max-restarts, as a group restart).
    int replacements = 0;
    /// The failure a replacement is recovering from until the survivors join its generation
    /// (RecoveryEnded); a timeout turns it into the group's failure.
    std::optional<Failure> recovering;
    /// --checkpoint-signal: non-zero while the workers were sent this signal to checkpoint and
    /// exit on their own within --checkpoint-grace (ptrun was asked to stop: `stop_signal`).
    int checkpoint_signal = 0;
    bool checkpoint_pending = false;  ///< within --checkpoint-grace (false once stopped as today)
    /// The checkpoint began on another node's (RoundEnded::checkpoint): this node's own notice of
    /// the preemption (the checkpoint signal or SIGTERM), when it comes, is absorbed once.
    bool checkpoint_anticipated = false;
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
    /// --restart-policy failed: a failed worker is replaced alone, the survivors
    /// keep running; each replacement counts against max_restarts.
    bool replace_failed = false;
};

/// A worker of the group was reaped.
struct WorkerExited {
    int local_rank = 0;
    WorkerExit exit;
};
/// ptrun received a signal; `terminate` says whether it ends the job (INT/TERM/HUP/QUIT) or is
/// only passed on (USR1/USR2).
/// `checkpoint`: non-zero when --checkpoint-signal makes this signal a request to checkpoint:
/// the workers get `checkpoint` (not `signo`) and the grace of --checkpoint-grace to exit.
struct SignalReceived {
    int signo = 0;
    bool terminate = true;
    int checkpoint = 0;
};
/// The grace period between SIGTERM and SIGKILL ran out.
struct GraceExpired {};
/// --checkpoint-grace ran out: the workers still running are stopped as on SIGTERM.
struct CheckpointGraceExpired {};
/// The watchdog judged local rank `local_rank` hung (its evidence is already captured); `signo`
/// ends the group (SIGABRT for Python workers, whose faulthandler then prints every thread).
struct HangDetected {
    int local_rank = 0;
    int signo = SIGTERM;
};

/// --restart-policy failed: the workers of generation `generation` all joined it (`joined`), or
/// --recovery-timeout ran out first.
struct RecoveryEnded {
    int generation = 0;
    bool joined = false;
};

using Event = std::variant<WorkerExited, SignalReceived, GraceExpired, RoundEnded, HangDetected,
                           RecoveryEnded, CheckpointGraceExpired>;

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
    ReplaceWorker,   ///< start `local_rank` again alone (state.generation is already advanced)
    Checkpoint,      ///< send `signo` to every worker and arm the --checkpoint-grace timer
};

struct Action {
    ActionKind kind = ActionKind::None;
    int signo = 0;
    int exit_code = 0;
    int local_rank = -1;  ///< ReplaceWorker's worker
    bool operator==(const Action&) const = default;
};

struct Decision {
    GroupState next;
    Action action;
    /// The attempt's first failure when this event is it (also when `next` has already moved on
    /// to a restart and no longer holds it): the cause to report and announce.
    std::optional<Failure> first_failure = std::nullopt;
    /// A recovery in place timed out: the group restart that follows is its fallback (said once).
    bool recovery_fallback = false;
};

/// The restarts `s` has used of --max-restarts: group restarts and replacements.
inline int restarts_used(const GroupState& s) { return s.restart_count + s.replacements; }

/// Pure: the state after `ev` and what the supervisor must do.
Decision decide(const GroupState& state, const RestartPolicy& policy, const Event& ev);

}  // namespace ptrun::launcher
