#pragma once
/// StrategyTuner: which CopyStrategy each message size runs, chosen by timing them on this machine.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "copy_strategy.hpp"
#include "shm_layout.hpp"

namespace ptrun::ddp::detail {

/// Keeps, per size class (kSizeClasses), a round of trials, then a choice:
/// - a trial round runs each candidate in turn: once to warm up, then trials(class) times
///   between two barriers, timed (more for small messages, whose times are short and noisy);
///   each rank keeps its best time per candidate in its RankBoard;
/// - the call after the round syncs first (StrategyTuner::Plan::agree), then every rank reads
///   every board and takes the candidate whose slowest rank was fastest, the incumbent unless
///   another beats it by kSwitchMargin: the same numbers everywhere, so the same choice;
/// - the choice holds for as many calls as take about kRecheckAfter of its time, then a new
///   round starts: the host moves vCPUs and load comes and goes. The first holds are short
///   (kMinCallsBetweenRounds, doubling each round) so that a choice made while something else
///   disturbed the first calls is soon checked again.
/// It relies on every local rank making the same sequence of calls (collectives are issued in the
/// same order everywhere), so call counts agree without messages. Not thread-safe: one per rank.
class StrategyTuner {
  public:
    static constexpr int kMinTrialsPerCandidate = 3;
    static constexpr double kSwitchMargin = 0.03;
    static constexpr std::chrono::milliseconds kRecheckAfter{2000};
    static constexpr std::uint32_t kMinCallsBetweenRounds = 64;
    static constexpr std::uint32_t kMaxCallsBetweenRounds = 1U << 20;

    /// What the next call of a size class runs.
    struct Plan {
        int size_class = 0;
        CopyStrategy strategy = CopyStrategy::Streamed;
        bool warmup = false;  ///< a candidate's untimed first call in a trial round
        bool timed = false;   ///< a trial: run it between two barriers and record() its time
        bool agree = false;   ///< sync, then agree(), which replaces `strategy`
    };

    /// `boards` holds every local rank's board, `me` is this rank's index. Until
    /// set_candidates(), the only candidate is Streamed.
    StrategyTuner(RankBoard* boards, int local_size, int me);

    /// The strategies to choose from (a bit per CopyStrategy); a single one is used untimed.
    /// Restarts every class. Every rank must pass the same set.
    void set_candidates(unsigned mask);
    unsigned candidates() const noexcept { return candidates_; }

    /// The class of a message of `bytes` (> 16 KiB; larger than 4 MiB counts as 4 MiB).
    static int size_class(std::size_t bytes);

    /// How many timed trials each candidate gets in a round of `size_class`.
    static std::uint32_t trials(int size_class);

    /// The plan for the next call of `bytes`; counts the call.
    Plan next(std::size_t bytes);
    /// This rank's time of the trial `plan` (from its opening barrier to its closing one).
    void record(const Plan& plan, std::chrono::nanoseconds elapsed);
    /// After a barrier that every rank passed after its round's last record(): the choice for
    /// `size_class`, identical on every rank.
    CopyStrategy agree(int size_class);
    /// The current choice of a class, if one was agreed.
    bool chosen(int size_class, CopyStrategy* strategy) const;
    /// Whether, for messages of `bytes`, the last agreed round found streamed slot writes
    /// faster than plain ones (true until a round timed both; false when plain is the only
    /// candidate): for the collectives that write the slots without a tuner of their own. A
    /// local choice; ranks need not agree on it.
    bool streaming_pays(std::size_t bytes) const;

  private:
    struct ClassState {
        bool holding = false;     ///< a choice holds (else a trial round runs)
        bool has_choice = false;  ///< `choice` was agreed (it stays the incumbent in a round)
        CopyStrategy choice = CopyStrategy::Streamed;
        std::uint32_t calls = 0;       ///< calls since the round (or the hold) began
        std::uint32_t hold_calls = 0;  ///< calls the choice holds before the next round
        std::uint32_t rounds = 0;      ///< rounds agreed so far
        std::array<std::uint32_t, kCopyStrategies> worst{};  ///< the last round's, 0 if untimed
        std::array<bool, kCopyStrategies> recorded{};        ///< this round has a time for it
    };
    int candidate_count() const;
    CopyStrategy nth_candidate(int n) const;

    RankBoard* boards_;
    int local_size_;
    int me_;
    unsigned candidates_ = 1U << static_cast<int>(CopyStrategy::Streamed);
    std::array<ClassState, kSizeClasses> classes_{};
};

}  // namespace ptrun::ddp::detail
