#pragma once
/// The layout of a node's shared segment: header, one control block and one board per local
/// rank, one data slot per local rank. Every process maps the same bytes; only atomics are
/// shared state.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "copy_strategy.hpp"

namespace ptrun::ddp::detail {

inline constexpr std::uint64_t kShmMagic = 0x7074'7275'6e64'6470ULL;  // "ptrundp"
inline constexpr std::size_t kPageBytes = 4096;

/// Segment header, written by the creator before it publishes the name.
struct alignas(128) ShmHeader {
    std::uint64_t magic;
    std::uint32_t local_size;
    /// 0: every rank tunes its copy strategies (StrategyTuner); 1 + CopyStrategy: that one only.
    std::uint32_t copy_mode;
    std::uint64_t slot_bytes;
    /// 0, or 1 + the global rank blamed for a failure; set once by whoever detects it first.
    std::atomic<std::int32_t> abort_culprit;
    /// Global rank that set abort_culprit.
    std::atomic<std::int32_t> abort_reporter;
};

/// One local rank's progress word (a futex) and sleeper count, alone on its cache lines.
struct alignas(128) RankControl {
    std::atomic<std::uint32_t> step;      ///< phases completed; waiters compare wrap-safely
    std::atomic<std::uint32_t> sleepers;  ///< peers in futex_wait on `step`
};

/// Message size classes StrategyTuner keeps apart: (16 KiB, 32 KiB], ..., (2 MiB, 4 MiB].
inline constexpr int kSizeClasses = 8;

/// What a local rank publishes for its peers besides its step, off the lines they spin on.
struct alignas(128) RankBoard {
    /// Address, in this rank's process, of the buffer of its running single-copy allreduce.
    std::atomic<std::uint64_t> buffer;
    /// Address, in this rank's process, of a word holding kShmMagic (the single-copy reach check).
    std::atomic<std::uint64_t> probe;
    /// 0 unknown; 1 this rank read every peer's probe word with process_vm_readv; 2 it could not.
    std::atomic<std::uint32_t> reach;
    /// This rank's best time, in ns, of each strategy in the current trial round of each class.
    std::atomic<std::uint32_t> trial_ns[kSizeClasses][kCopyStrategies];
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

/// Byte offset of local rank `index`'s control block.
constexpr std::size_t control_offset(int index) {
    return sizeof(ShmHeader) + static_cast<std::size_t>(index) * sizeof(RankControl);
}

/// Byte offset of local rank `index`'s board (after every control block).
constexpr std::size_t board_offset(int local_size, int index) {
    return control_offset(local_size) + static_cast<std::size_t>(index) * sizeof(RankBoard);
}

/// Byte offset of the first data slot (page aligned).
constexpr std::size_t slots_offset(int local_size) {
    const std::size_t end = board_offset(local_size, local_size);
    return (end + kPageBytes - 1) / kPageBytes * kPageBytes;
}

/// Byte offset of local rank `index`'s data slot.
constexpr std::size_t slot_offset(int local_size, int index, std::size_t slot_bytes) {
    return slots_offset(local_size) + static_cast<std::size_t>(index) * slot_bytes;
}

/// Total segment size for `local_size` ranks with `slot_bytes` each.
constexpr std::size_t segment_bytes(int local_size, std::size_t slot_bytes) {
    return slot_offset(local_size, local_size, slot_bytes);
}

/// True when `value` has reached `target` (wrap-safe for counters at most 2^31 apart).
constexpr bool step_reached(std::uint32_t value, std::uint32_t target) {
    return static_cast<std::int32_t>(value - target) >= 0;
}

}  // namespace ptrun::ddp::detail
