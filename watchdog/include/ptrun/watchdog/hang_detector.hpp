#pragma once
/// Hang detection as one pure function: the local ranks' progress in, which are hung (and which
/// stopped first) out, plus when to look again. No clock, no I/O: the agent samples the
/// heartbeat records (and counts timer requests as progress) when its timer fires, calls
/// judge_hangs(), and re-arms one steady_timer for `next_check`. Healthy workers therefore cost
/// one wake-up per --hang-timeout, never a polling loop.
///
/// The rules, for --hang-timeout T (every duration measured from no earlier than
/// `watching_since`, the moment the agent last knows it was itself running: its start, or its
/// resumption after being stopped, e.g. a job suspended by `scontrol suspend`, so that time the
/// agent could not watch never counts against a worker):
///  - Exited ranks are never hung (their exit is the supervisor's business).
///  - A stopped rank (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) is hung once stopped for T, whether or
///    not it ever beat and whatever section it announced: a stopped process cannot progress. It
///    is also hung as soon as any other rank is (the peers blocked on it fall silent a few ms
///    before the agent sees the stop, so they reach T first).
///  - A rank whose heartbeat record is damaged (`record_problem`: truncated, overwritten, times out
///    of range) tells nothing of its progress: it is judged as a rank that never beat.
///  - Start-up: a running rank that has never beaten is not judged by T (imports, data loading
///    and NCCL set-up may take any time) until a local peer exits successfully; then the group is
///    finishing, and a rank still silent T after the first such exit is hung ("not finishing").
///  - After its first beat, a running rank outside any section is hung after T without progress.
///  - Sections extend, never shorten: inside a section with a deadline, a rank is hung only once
///    both the deadline has passed and T has passed since its last progress (entering the section
///    is progress); inside a section without a deadline it is never hung by silence until it
///    leaves (leaving is progress, so T starts again from there).
/// Order of `hung` (the first is the one named as "stopped progressing first"): stopped ranks
/// (earliest stop first), then ranks past their section's deadline (earliest deadline first),
/// then silent ranks (earliest last progress first, then fewest beats), then ranks that are not
/// finishing; ties by local rank.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::watchdog {

using Clock = std::chrono::steady_clock;

enum class RankActivity { Running, Stopped, Exited };

/// One local rank as the agent sees it at judging time.
struct RankProgress {
    int local_rank = 0;
    RankActivity activity = RankActivity::Running;
    /// Stopped: since when (nullopt: it was found stopped when watching began).
    std::optional<Clock::time_point> stopped_since;
    int stop_signal = 0;                                ///< Stopped: by which signal (0: unknown)
    bool exited_ok = false;                             ///< Exited: with code 0
    std::optional<Clock::time_point> exited_at;         ///< Exited: when
    std::uint64_t count = 0;                            ///< progress so far (beats, timer requests)
    std::optional<Clock::time_point> last_progress;     ///< nullopt: never beaten
    std::optional<std::string> section;                 ///< the open section's name
    std::optional<Clock::time_point> section_deadline;  ///< nullopt: none (or no section)
    /// Empty while its heartbeat record is sound; else what is wrong with it (its progress is
    /// then unknown, and the fields above are its last sound sample, for display only).
    std::string record_problem;
};

enum class HangReason {
    Stopped,         ///< stopped by a signal for the timeout
    SectionOverrun,  ///< past its section's deadline and silent for the timeout
    NoProgress,      ///< silent for the timeout after its first beat
    NotFinishing,    ///< never beat, still running the timeout after a peer exited successfully
};

struct HungRank {
    int local_rank = 0;
    HangReason reason = HangReason::NoProgress;
    Clock::time_point silent_since;  ///< the start of the silence that counted
    std::optional<std::string> section;
    bool operator==(const HungRank&) const = default;
};

struct HangVerdict {
    std::vector<HungRank> hung;  ///< empty: nobody is hung; else ordered as documented above
    /// The earliest moment a rank not hung now would become hung if nothing new is learnt;
    /// nullopt when only new information (a beat, an exit) can change the verdict.
    std::optional<Clock::time_point> next_check;
};

/// Pure: which ranks are hung at `now` under `timeout` (> 0).
HangVerdict judge_hangs(const std::vector<RankProgress>& ranks, Clock::duration timeout,
                        Clock::time_point now, Clock::time_point watching_since);

/// "stopped (SIGSTOP) for 31 s", "no progress for 62 s (42 beats)", ...: one rank's reason in
/// words, for reports and /health.
std::string describe_hang(const HungRank& hung, const RankProgress& rank, Clock::time_point now);

}  // namespace ptrun::watchdog
