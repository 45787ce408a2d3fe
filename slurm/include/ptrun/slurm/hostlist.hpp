#pragma once
/// SLURM hostlist expressions ("node[01-04,7],login1"), as `scontrol show hostnames` expands them
/// and `scontrol show hostlist` writes them.
///
/// Grammar (one-dimensional, as in SchedMD's src/common/hostlist.h):
///   hostlist := host (sep host)*          sep: ',' or whitespace, outside brackets
///   host     := text ('[' ranges ']' text)*   the last text must be empty when brackets occur
///   ranges   := range (',' range)*        range: DIGITS | DIGITS '-' DIGITS, low <= high
/// The zero-padding width of a range is the length of its low bound: "n[008-010]" -> n008..n010,
/// "n[8-10]" -> n8..n10. Several bracket groups expand as a cartesian product, the first group
/// outermost: "a[1-2]b[3-4]" -> a1b3 a1b4 a2b3 a2b4. Order and duplicates are kept.
///
/// Stricter than scontrol, on purpose: empty elements ("a,,b", "a,"), unbalanced brackets
/// ("n[1-3", "n1]") and an open-ended range ("n[1-]") are errors, and the cap counts the whole
/// expansion, not each range.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/slurm/parse_error.hpp"

namespace ptrun::slurm {

/// SLURM's MAX_RANGE: the most hosts one expression may expand to by default.
inline constexpr std::size_t kMaxHosts = 65536;

/// Expands `expr` into host names in order; "" gives an empty list. Throws ParseError (with the
/// offset) on a malformed expression, or when it would yield more than `max_hosts` names: the
/// count is computed before anything is allocated, so "n[0-99999999]" fails at once.
std::vector<std::string> expand_hostlist(std::string_view expr, std::size_t max_hosts = kMaxHosts);

/// Writes `hosts` as a hostlist in their order, merging runs of neighbours that differ only in a
/// trailing number: {node1,node2,node3,node5} -> "node[1-3,5]", {node2,node1} -> "node[2,1]".
/// expand_hostlist(compress_hostlist(h)) == h. Throws ParseError for an empty name or one that
/// holds '[', ']', ',' or whitespace.
std::string compress_hostlist(const std::vector<std::string>& hosts);

}  // namespace ptrun::slurm
