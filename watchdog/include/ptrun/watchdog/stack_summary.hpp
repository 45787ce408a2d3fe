#pragma once
/// Where every rank is, in one line for the failure report, and in full in files:
///     rank 1 in `stuck_in_loader` (train.py:61); ranks 0,2-3 in `all_reduce` <- `step`
///     (train.py:40)
/// Each rank's place comes from its main thread: with a Python stack, the innermost frame of the
/// user's own code (outside Python's standard library and site-/dist-packages) with the call it
/// is blocked in (the frame it called, when that is Python), else the innermost frame outside the
/// standard library; without one, the native stack (the innermost frame naming a collective, else
/// the innermost outside the C and C++ runtime libraries). Ranks in the same place form a group;
/// the smallest groups (the odd ones out) come first.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "ptrun/watchdog/stacks.hpp"

namespace ptrun::watchdog {

/// Everything captured for one rank.
struct RankStacks {
    int rank = 0;  ///< global rank (named in the summary)
    int local_rank = 0;
    pid_t pid = 0;
    std::vector<ThreadStack> python{};  ///< parse_python_faulthandler; empty when none
    std::vector<ThreadStack> native{};  ///< parse_eu_stack / parse_gdb_backtrace; empty when none
    std::string python_text{};          ///< the raw texts, for the files
    std::string native_text{};
    std::string note{};  ///< why something is missing ("no stack tool found", ...)
};

/// The frame that says where a rank is; nullptr when it has no stack at all.
const Frame* place_of(const RankStacks& rank);
/// "`function` (file.py:12)", "`ShmCollectives::allreduce`", or "an unknown place".
std::string describe_place(const Frame* frame);
/// The rank's place as the summary names it ("`all_reduce` <- `step` (train.py:40)"); "" when it
/// has no stack.
std::string place_text(const RankStacks& rank);

/// The rank the stacks single out, and why.
struct OddOneOut {
    int rank = 0;     ///< global rank
    std::string why;  ///< "the only rank whose stack differs from the others'", ...
};
/// Among ranks with a stack: the only one in a place of its own while at least two others share
/// one, else the only one outside any collective while every other is in one; nullopt when the
/// stacks single out no rank (fewer than two stacks, all alike, or several candidates).
std::optional<OddOneOut> odd_one_out(const std::vector<RankStacks>& ranks);

/// The one-line summary (no trailing newline); "" when `ranks` is empty.
std::string summarise_stacks(const std::vector<RankStacks>& ranks);
/// "0-2,5,7-8": sorted ranks as ranges.
std::string format_ranks(std::vector<int> ranks);
/// Writes <dir>/stacks_rank_<rank>.txt for every rank (its note, the Python then the native
/// text); returns the paths. `dir` must exist. Throws std::runtime_error naming a file it cannot
/// write.
std::vector<std::string> write_stacks(const std::string& dir, const std::vector<RankStacks>& ranks);

}  // namespace ptrun::watchdog
