#pragma once
/// Resynchronising training state across a re-formed group (recovery in place, recovery.hpp):
/// no checkpoint is read; the furthest rank sends its state to the others.

#include <cstdint>
#include <span>
#include <vector>

#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp {

/// Where a rank's training stands.
struct TrainingPosition {
    std::int64_t epoch = 0;
    std::int64_t step = 0;  ///< steps completed; -1: this rank holds no state (a replacement)
};

/// What resync_state agreed on.
struct Resynced {
    TrainingPosition position;  ///< the source's position, now every rank's
    int source = 0;             ///< the rank whose state every rank now holds
};

/// Brings every rank to the state of the furthest one: s = the most steps any rank completed,
/// the source is the lowest rank at s, and its position and `buffers` (parameters, optimizer
/// state, ...) are broadcast to every rank. Exact when steps are atomic (a rank's buffers change
/// only after all of a step's collectives succeeded). A collective: every rank passes buffers
/// of the same sizes in the same order. The state travels staged in one packed copy: when the
/// group fails (CollectiveError and its kinds), every rank's buffers are as they were. Blocks;
/// throws std::invalid_argument when the ranks' sizes differ, std::runtime_error when no rank
/// holds state (all at -1): neither is a CollectiveError, as re-forming would not help.
Resynced resync_state(ProcessGroup& pg, TrainingPosition mine,
                      const std::vector<std::span<float>>& buffers);

}  // namespace ptrun::ddp
