#include "ptrun/ddp/errors.hpp"

#include <utility>

namespace ptrun::ddp {

std::string describe_ranks(const std::vector<int>& ranks) {
    std::string out;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (i != 0) out += ", ";
        out += std::to_string(ranks[i]);
    }
    return out;
}

namespace {
std::string timeout_message(std::string_view collective, const std::vector<int>& peers,
                            std::chrono::milliseconds waited) {
    std::string msg =
        std::string(collective) + " timed out after " + std::to_string(waited.count()) + " ms";
    if (!peers.empty()) {
        msg += (peers.size() == 1 ? " waiting for rank " : " waiting for ranks ") +
               describe_ranks(peers);
    }
    return msg;
}
}  // namespace

CollectiveTimeout::CollectiveTimeout(std::string_view collective, std::vector<int> peer_ranks,
                                     std::chrono::milliseconds waited_for)
    : CollectiveError(timeout_message(collective, peer_ranks, waited_for)),
      peers(std::move(peer_ranks)),
      waited(waited_for) {}

PeerLost::PeerLost(std::string_view collective, int peer_rank, std::string_view detail)
    : CollectiveError(std::string(collective) + ": lost rank " + std::to_string(peer_rank) + " (" +
                      std::string(detail) + ")"),
      peer(peer_rank) {}

}  // namespace ptrun::ddp
