#pragma once
/// The merged timeline as Chrome's Trace Event Format (JSON Object Format), what Perfetto
/// (ui.perfetto.dev) and chrome://tracing open: one process per node ("node 0: host"), a track
/// per rank ("rank 3") and one for the node's agent ("ptrun"). A rank's phases of each attempt
/// are complete events ("X") between its consecutive events, named after what the rank was
/// doing (spawn, program start, python+imports, process group, until first step, running); the
/// agent's events are instants ("i"). Each rank's memory samples are two counter tracks ("C")
/// of its node, "rank 3 memory" (resident) and "rank 3 peak memory", in bytes. Times are
/// microseconds since the earliest event, on the store host's clock (each node's offset applied);
/// otherData.nodes lists each node's pid, name, offset_ns and error_ns.

#include <cstdint>
#include <string>
#include <vector>

#include "ptrun/launcher/timeline/timeline_event.hpp"

namespace ptrun::launcher {

/// trace.json's text. A rank's last phase still going on ends at `now_ns` (store host clock).
std::string chrome_trace(const std::vector<NodeTimeline>& nodes, std::uint64_t now_ns);

}  // namespace ptrun::launcher
