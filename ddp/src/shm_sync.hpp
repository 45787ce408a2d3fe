#pragma once
/// ShmSync: phase counters in shared memory, with bounded waits that notice dead peers.

#include <chrono>
#include <cstdint>
#include <vector>

#include "shm_layout.hpp"

namespace ptrun::ddp::detail {

using Clock = std::chrono::steady_clock;

/// The local ranks of one node advance a per-rank step counter after each phase of a collective;
/// a rank waits until its peers' counters reach its own. Waiting spins briefly (yields when
/// there are more local ranks than CPUs), then sleeps on the futex in short slices, checking
/// between slices the deadline, the group's abort word and each peer's pidfd. Failures throw
/// CollectiveTimeout / PeerLost naming global ranks and mark the segment aborted, which makes
/// every other local rank fail at once instead of waiting out its own timeout.
class ShmSync {
  public:
    /// `base` is the mapped segment; `global_ranks[i]` and `pids[i]` describe local rank i.
    ShmSync(void* base, int local_index, std::vector<int> global_ranks, std::vector<int> pids);
    ~ShmSync();
    ShmSync(const ShmSync&) = delete;
    ShmSync& operator=(const ShmSync&) = delete;

    /// Publishes this rank's next step and returns it. Never blocks.
    std::uint32_t advance();
    /// Blocks until every other local rank reached `target`, or throws (timeout, lost peer,
    /// abort) once `deadline` passes; `collective` and `timeout` name it in the message.
    void wait_all(std::uint32_t target, const char* collective, Clock::time_point deadline,
                  std::chrono::milliseconds timeout);
    /// advance() then wait_all() on the new step: a barrier of the local ranks.
    void sync(const char* collective, Clock::time_point deadline,
              std::chrono::milliseconds timeout);
    /// Marks the segment aborted, blaming global rank `culprit`, and wakes every sleeper.
    void abort(int culprit) noexcept;
    /// The global rank blamed by an abort, or -1.
    int aborted_culprit() const noexcept;
    /// True while local rank `index`'s process exists (pidfd not readable).
    bool alive(int index) const;

    int local_index() const noexcept { return me_; }
    int local_size() const noexcept { return static_cast<int>(global_ranks_.size()); }

  private:
    void wait_one(int index, std::uint32_t target, const char* collective,
                  Clock::time_point deadline, std::chrono::milliseconds timeout);
    [[noreturn]] void fail_aborted(const char* collective) const;
    RankControl& control(int index) const;

    char* base_;
    ShmHeader* header_;
    int me_;
    std::vector<int> global_ranks_;
    std::vector<int> pids_;
    std::vector<int> pidfds_;  ///< -1 for self or where pidfd_open failed
    std::uint32_t step_ = 0;
    bool oversubscribed_;
};

}  // namespace ptrun::ddp::detail
