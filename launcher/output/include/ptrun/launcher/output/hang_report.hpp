#pragma once
/// The report printed when the watchdog finds a hung worker: who stopped making progress first
/// and how, where every local rank was (one line from summarise_stacks), each rank's progress,
/// where the full stacks went, and what ptrun does about it.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::launcher {

/// One local rank as the report shows it.
struct HangReportRank {
    int rank = 0;
    int local_rank = 0;
    pid_t pid = 0;
    bool hung = false;
    std::string what;  ///< hung: describe_hang(); else "" (its progress speaks for it)
    std::uint64_t count = 0;
    std::optional<double> seconds_since_progress;  ///< nullopt: never made progress
    std::optional<std::string> section;
};

struct HangReport {
    std::string host;
    std::vector<HangReportRank> ranks;  ///< the first hung one is named first
    int first = 0;  ///< local rank named first: the odd one out, else the first to stop
    /// Why the stacks single `first` out (watchdog::odd_one_out); "" when they do not, and
    /// `first` is the rank that stopped making progress first.
    std::string first_why;
    std::string where;  ///< summarise_stacks(), "" when nothing was captured
    /// The Python stack dump of the rank named first, printed whole; "" when there is none.
    std::string first_python_stack;
    std::string stacks_dir;          ///< where stacks_rank_*.txt went, "" when not written
    std::vector<std::string> notes;  ///< what could not be captured, and why
    std::string outcome;             ///< "restarting (restart 1 of 3)", "exit code 124 (hung)"
};

/// The multi-line report (each line ends with '\n').
std::string format_hang_report(const HangReport& report);

}  // namespace ptrun::launcher
