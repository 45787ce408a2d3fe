#pragma once
/// The collectives' exception family. Messages name the collective, the peer rank(s) and times.

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::ddp {

/// Base of every collective failure (bad arguments, bootstrap failure, backend error, ...).
struct CollectiveError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A collective did not complete in time. Message: "allreduce timed out after 300000 ms waiting
/// for ranks 2, 3" ("for rank 2" for one).
struct CollectiveTimeout : CollectiveError {
    using CollectiveError::CollectiveError;
    /// Builds the message above from its parts.
    CollectiveTimeout(std::string_view collective, std::vector<int> peers,
                      std::chrono::milliseconds waited);

    std::vector<int> peers;              ///< ranks that had not arrived (may be empty if unknown)
    std::chrono::milliseconds waited{};  ///< how long the collective waited
};

/// A peer is known to be gone (its process exited, its connection closed). Message: "allreduce:
/// lost rank 3 (process exited)".
struct PeerLost : CollectiveError {
    using CollectiveError::CollectiveError;
    /// Builds the message above from its parts.
    PeerLost(std::string_view collective, int peer, std::string_view detail);

    int peer = -1;  ///< the lost rank (-1 if unknown)
};

/// "2, 3": ranks for messages.
std::string describe_ranks(const std::vector<int>& ranks);

}  // namespace ptrun::ddp
