#include "shm_sync.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <thread>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp::detail {
namespace {

// Spinning wins as long as each rank has its own CPU: a peer a few hundred microseconds behind
// (one chunk of a large message, a preemption) is caught without a futex round trip, which
// costs tens of microseconds here. Beyond this the waiter sleeps and leaves the CPU to others.
constexpr auto kSpinFor = std::chrono::milliseconds(2);
constexpr auto kSleepSlice = std::chrono::milliseconds(20);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

std::uint32_t* futex_word(std::atomic<std::uint32_t>& a) {
    return reinterpret_cast<std::uint32_t*>(&a);
}

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds for_at_most) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(for_at_most.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(for_at_most.count() % 1'000'000'000);
    ::syscall(SYS_futex, futex_word(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
    ::syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

int open_pidfd(int pid) {
#ifdef SYS_pidfd_open
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -1 : static_cast<int>(fd);
#else
    (void)pid;
    return -1;
#endif
}

}  // namespace

ShmSync::ShmSync(void* base, int local_index, std::vector<int> global_ranks, std::vector<int> pids)
    : base_(static_cast<char*>(base)),
      header_(static_cast<ShmHeader*>(base)),
      me_(local_index),
      global_ranks_(std::move(global_ranks)),
      pids_(std::move(pids)),
      oversubscribed_(static_cast<long>(global_ranks_.size()) > ::sysconf(_SC_NPROCESSORS_ONLN)) {
    for (std::size_t i = 0; i < pids_.size(); ++i) {
        pidfds_.push_back(static_cast<int>(i) == me_ ? -1 : open_pidfd(pids_[i]));
    }
    step_ = control(me_).step.load(std::memory_order_relaxed);
}

ShmSync::~ShmSync() {
    for (int fd : pidfds_) {
        if (fd >= 0) ::close(fd);
    }
}

RankControl& ShmSync::control(int index) const {
    return *reinterpret_cast<RankControl*>(base_ + control_offset(index));
}

std::uint32_t ShmSync::advance() {
    RankControl& mine = control(me_);
    mine.step.store(++step_, std::memory_order_seq_cst);
    if (mine.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(mine.step);
    return step_;
}

void ShmSync::sync(const char* collective, Clock::time_point deadline,
                   std::chrono::milliseconds timeout) {
    wait_all(advance(), collective, deadline, timeout);
}

void ShmSync::wait_all(std::uint32_t target, const char* collective, Clock::time_point deadline,
                       std::chrono::milliseconds timeout) {
    for (int i = 0; i < local_size(); ++i) {
        if (i != me_) wait_one(i, target, collective, deadline, timeout);
    }
}

bool ShmSync::alive(int index) const {
    const int fd = pidfds_[static_cast<std::size_t>(index)];
    if (fd >= 0) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
    }
    return ::kill(pids_[static_cast<std::size_t>(index)], 0) == 0 || errno == EPERM;
}

int ShmSync::aborted_culprit() const noexcept {
    return header_->abort_culprit.load(std::memory_order_acquire) - 1;
}

void ShmSync::abort(int culprit) noexcept {
    std::int32_t expected = 0;
    if (header_->abort_culprit.compare_exchange_strong(expected, culprit + 1)) {
        header_->abort_reporter.store(global_ranks_[static_cast<std::size_t>(me_)]);
    }
    for (int i = 0; i < local_size(); ++i) futex_wake_all(control(i).step);
}

void ShmSync::fail_aborted(const char* collective) const {
    const int culprit = aborted_culprit();
    throw PeerLost(collective, culprit,
                   "the group was aborted by rank " +
                       std::to_string(header_->abort_reporter.load()) + " after rank " +
                       std::to_string(culprit) + " failed or timed out");
}

void ShmSync::wait_one(int index, std::uint32_t target, const char* collective,
                       Clock::time_point deadline, std::chrono::milliseconds timeout) {
    RankControl& peer = control(index);
    if (step_reached(peer.step.load(std::memory_order_acquire), target)) return;

    const auto spin_until = Clock::now() + kSpinFor;
    for (unsigned i = 1;; ++i) {
        if (step_reached(peer.step.load(std::memory_order_acquire), target)) return;
        if (oversubscribed_) {
            ::sched_yield();  // the peer may be queued on this very CPU
        } else {
            cpu_relax();  // never yield here: under background load a yield costs a whole slice
        }
        if ((i & 63U) == 0 && Clock::now() >= spin_until) break;
    }
    const int peer_rank = global_ranks_[static_cast<std::size_t>(index)];
    for (;;) {
        if (aborted_culprit() >= 0) fail_aborted(collective);
        if (!alive(index)) {
            // A peer can reach the target and exit (its last barrier) between our last look at
            // its step and this check; its step is final now, so look once more.
            if (step_reached(peer.step.load(std::memory_order_acquire), target)) return;
            abort(peer_rank);
            throw PeerLost(collective, peer_rank, "its process exited");
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            std::vector<int> late;  // every local rank still short of the target, for the message
            for (int i = 0; i < local_size(); ++i) {
                if (i != me_ && !step_reached(control(i).step.load(), target)) {
                    late.push_back(global_ranks_[static_cast<std::size_t>(i)]);
                }
            }
            abort(peer_rank);
            throw CollectiveTimeout(collective, late.empty() ? std::vector<int>{peer_rank} : late,
                                    timeout);
        }
        peer.sleepers.fetch_add(1, std::memory_order_seq_cst);
        const std::uint32_t seen = peer.step.load(std::memory_order_seq_cst);
        if (!step_reached(seen, target)) {
            futex_wait(peer.step, seen, std::min<Clock::duration>(deadline - now, kSleepSlice));
        }
        peer.sleepers.fetch_sub(1, std::memory_order_seq_cst);
        if (step_reached(peer.step.load(std::memory_order_acquire), target)) return;
    }
}

}  // namespace ptrun::ddp::detail
