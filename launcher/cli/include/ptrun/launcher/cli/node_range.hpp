#pragma once
/// `--nnodes N` or `--nnodes MIN:MAX`.

#include <string_view>

namespace ptrun::launcher {

/// How many nodes (agents) the job may have.
struct NodeRange {
    int min = 1;
    int max = 1;
    bool operator==(const NodeRange&) const = default;
};

/// Parses "N" or "MIN:MAX" (1 <= MIN <= MAX); throws UsageError naming the value.
NodeRange parse_node_range(std::string_view text);

}  // namespace ptrun::launcher
