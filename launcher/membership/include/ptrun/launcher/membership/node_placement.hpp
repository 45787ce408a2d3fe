#pragma once
/// One member's share of a closed round: what its agent needs to start its workers. The
/// coordinator writes it as the member's admission (rdzv_keys.hpp admit), so a joining node reads
/// a few hundred bytes instead of the whole member list: at N nodes the round's full assignment
/// read by every node is N x N bytes through the store (4,096 nodes: about 3 GB).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::launcher {

inline constexpr std::size_t kMaxPlacementNotes = 8;
inline constexpr std::size_t kMaxPlacementNote = 1024;

struct NodePlacement {
    int round = 0;
    int restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT
    int group_rank = 0;
    int nodes = 0;      ///< members of the round
    int rank_base = 0;  ///< global rank of this node's local rank 0
    int world_size = 0;
    std::string master_addr;
    std::uint16_t master_port = 0;
    /// Random per round, chosen by the coordinator: the round's end is authenticated together
    /// with it, so that an end recorded from another run (same run id) cannot be replayed.
    std::string token;
    /// Why nodes of the last round are not in this one (RoundAssignment::notes), at most
    /// kMaxPlacementNotes, each at most kMaxPlacementNote bytes.
    std::vector<std::string> notes;
    /// --restart-policy failed: this node takes a lost member's place in the running round; its
    /// workers start as a new generation of the same ranks while the other nodes keep running.
    bool replacement = false;
    bool operator==(const NodePlacement&) const = default;
};

/// Every member's placement, in group-rank order (linear in the members); the assignment's notes
/// beyond kMaxPlacementNotes - 1 are counted in a last one.
std::vector<NodePlacement> placements(const RoundAssignment& assignment);

std::string encode(const NodePlacement& placement);
/// Throws std::runtime_error naming what is missing or malformed (the text came over the network).
NodePlacement decode_placement(const std::string& text);

}  // namespace ptrun::launcher
