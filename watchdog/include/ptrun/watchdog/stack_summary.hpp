#pragma once
/// Where every rank is, in one line for the failure report, and in full in files:
///     rank 3 in `__next__` (dataloader.py:633); ranks 0-2 in `all_reduce`
///     (distributed_c10d.py:1536)
/// Each rank's place is one frame of its main thread: the Python stack when there is one (the
/// innermost frame outside Python's own standard library), else the native one (the innermost
/// frame naming a collective, else the innermost outside the C and C++ runtime libraries).
/// Ranks in the same place form a group; the smallest groups (the odd ones out) come first.

#include <sys/types.h>

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
/// The one-line summary (no trailing newline); "" when `ranks` is empty.
std::string summarise_stacks(const std::vector<RankStacks>& ranks);
/// "0-2,5,7-8": sorted ranks as ranges.
std::string format_ranks(std::vector<int> ranks);
/// Writes <dir>/stacks_rank_<rank>.txt for every rank (its note, the Python then the native
/// text); returns the paths. `dir` must exist. Throws std::runtime_error naming a file it cannot
/// write.
std::vector<std::string> write_stacks(const std::string& dir, const std::vector<RankStacks>& ranks);

}  // namespace ptrun::watchdog
