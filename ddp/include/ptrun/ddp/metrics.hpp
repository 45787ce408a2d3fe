#pragma once
/// Metrics reduce: a name -> value map averaged across the ranks of a process group.

#include <map>
#include <stdexcept>
#include <string>

#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp {

/// Ranks passed different sets of metric names; the message lists each rank's names.
struct MetricsMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using Metrics = std::map<std::string, double>;

/// Averages every value across the ranks of `pg` (a collective: every rank calls it with the same
/// names). First an allgather of a fingerprint of the names, so that a mismatch is reported on
/// every rank as MetricsMismatch instead of a mis-sized collective; then one allreduce of the
/// packed values. Blocks; throws CollectiveError from the group.
Metrics average_metrics(ProcessGroup& pg, const Metrics& local);

}  // namespace ptrun::ddp
