#pragma once
/// `ptrun logs HOST:PORT`: reads a running ptrun's worker lines through its health endpoint
/// (GET /status for its ranks, then GET /logs per rank, log_lines.hpp) and merges them in time
/// order, each prefixed "[host:rank] ". Every request has a deadline.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::watchdog {

struct LogsRequest {
    std::string host;
    std::uint16_t port = 0;
    std::vector<int> ranks;                  ///< empty: every rank the endpoint's node runs
    std::size_t tail = 0;                    ///< 0: the endpoint's default
    std::chrono::milliseconds within{5000};  ///< per request
};

struct LogsResult {
    bool answered = false;  ///< false: no ptrun /status came (`error` says why)
    std::string error;
    std::string text;                  ///< the merged lines, each ending in '\n'
    std::vector<std::string> missing;  ///< one sentence per rank or node whose lines did not come
};

/// Gathers and merges the lines `request` asks for.
LogsResult fetch_logs(const LogsRequest& request);

/// The /status document's workers on the answering node itself: (host, rank) pairs by rank,
/// and the other nodes' ranks (by host) it names; nullopt when `json` is not a /status document.
struct StatusRanks {
    std::string host;
    std::vector<int> own;
    std::vector<std::pair<std::string, int>> others;
};
std::optional<StatusRanks> status_ranks(const std::string& json);

}  // namespace ptrun::watchdog
