#pragma once
/// SLURM's per-node count lists: SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE and
/// SLURM_JOB_CPUS_PER_NODE. Comma-separated counts, a run of K equal counts C written "C(xK)":
/// "2" (one node), "1(x2)", "2,1", "3(x2),1" -> {3, 3, 1}.

#include <cstddef>
#include <string_view>
#include <vector>

#include "ptrun/slurm/hostlist.hpp"
#include "ptrun/slurm/parse_error.hpp"

namespace ptrun::slurm {

/// The largest count accepted for one node (SLURM's own default limit is far lower: 512 tasks).
inline constexpr int kMaxTasksPerNode = 65536;

/// One count per node, in node-list order. Throws ParseError (with the offset) on an empty list or
/// element, a count outside 1..kMaxTasksPerNode, a repeat "(xK)" with K < 1, anything after ')',
/// more than `max_nodes` entries (checked before allocating), or a total above INT_MAX.
std::vector<int> parse_tasks_per_node(std::string_view text, std::size_t max_nodes = kMaxHosts);

}  // namespace ptrun::slurm
