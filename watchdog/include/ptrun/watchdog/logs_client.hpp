#pragma once
/// `ptrun logs HOST:PORT`: reads a job's worker lines through its store host's health endpoint.
/// GET /status there names every node of the job, its ranks and the endpoint it published; the
/// client then asks each node itself (GET /logs per rank, log_lines.hpp), the nodes at once, and
/// merges the lines in time order, each prefixed "[host:rank] ". A node that does not answer is
/// named; the others' lines still come. With `follow`, each node is then long-polled
/// (log_follow.hpp) and its new lines passed on until its job ends. Every request has a deadline.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::watchdog {

struct LogsRequest {
    std::string host;
    std::uint16_t port = 0;
    std::vector<int> ranks;                  ///< empty: every rank of the job
    std::size_t tail = 0;                    ///< 0: the endpoint's default
    std::chrono::milliseconds within{5000};  ///< per request (a long-poll: its wait more)
};

struct LogsResult {
    bool answered = false;  ///< false: no ptrun /status came (`error` says why)
    std::string error;
    std::string text;                  ///< the merged lines, each ending in '\n'
    std::vector<std::string> missing;  ///< one sentence per rank or node whose lines did not come
    std::optional<int> exit_code;      ///< follow: the job's exit code, once its end was seen
};

/// Gathers and merges the lines `request` asks for.
LogsResult fetch_logs(const LogsRequest& request);

/// What follow_logs passes on as it goes, from one thread at a time.
struct LogsSink {
    std::function<void(const std::string& text)> lines;  ///< merged lines, each ending in '\n'
    std::function<void(const std::string& sentence)> missing;
};

/// fetch_logs, then every answering node's new lines as they are written, until each node's job
/// ended or it stopped answering. Blocks until then; `text` and `missing` of the result are
/// empty (they went to `sink`); `exit_code` is the job's when an end was seen (the asked node's
/// first).
LogsResult follow_logs(const LogsRequest& request, const LogsSink& sink);

/// One node of the job whose lines `ptrun logs` reads.
struct LogsNode {
    int node_rank = 0;
    std::string host;           ///< its host name, for the "[host:rank] " prefix
    std::string endpoint;       ///< "ADDR:PORT" as published; "" when it published none
    std::string endpoint_host;  ///< where it is reached ("" when unknown)
    std::uint16_t endpoint_port = 0;
    std::vector<int> ranks;  ///< its workers, by rank
};

/// The nodes a /status document names: the answering node first (reached at host:port, as
/// asked), then the others by node rank with the endpoint each published; nullopt when `json`
/// is not a /status document.
std::optional<std::vector<LogsNode>> job_log_nodes(const std::string& json, const std::string& host,
                                                   std::uint16_t port);

}  // namespace ptrun::watchdog
