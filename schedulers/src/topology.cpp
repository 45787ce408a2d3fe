#include "ptrun/schedulers/topology.hpp"

namespace ptrun::schedulers {
namespace {

std::string shown(const Sourced<int>& v) { return v.origin + "=" + std::to_string(v.value); }

void require(bool ok, const std::string& what) {
    if (!ok) throw env::ParseError(what);
}

}  // namespace

void check_topology(const Topology& t) {
    require(t.world_size.value >= 1, shown(t.world_size) + ": expected at least 1 task");
    require(t.rank.value >= 0 && t.rank.value < t.world_size.value,
            shown(t.rank) + ": expected a rank from 0 below " + shown(t.world_size));
    require(t.local_world_size.value >= 1 && t.local_world_size.value <= t.world_size.value,
            shown(t.local_world_size) + ": expected 1 to " + shown(t.world_size));
    require(
        t.local_rank.value >= 0 && t.local_rank.value < t.local_world_size.value,
        shown(t.local_rank) + ": expected a local rank from 0 below " + shown(t.local_world_size));
    require(t.nodes.value >= 1 && t.nodes.value <= t.world_size.value,
            shown(t.nodes) + ": expected 1 to " + shown(t.world_size) + " nodes");
    if (t.node_rank) {
        require(t.node_rank->value >= 0 && t.node_rank->value < t.nodes.value,
                shown(*t.node_rank) + ": expected a node rank from 0 below " + shown(t.nodes));
    }
    if (t.port) {
        require(t.port->value >= 1 && t.port->value <= 65535,
                shown(*t.port) + ": expected a port from 1 to 65535");
    }
}

}  // namespace ptrun::schedulers
