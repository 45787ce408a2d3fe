#pragma once
/// `ptrun status HOST:PORT`: reads a running ptrun's GET /status (its --health-port) and shows it
/// as a table a person reads in a terminal. Every step has a deadline: nothing waits more than a
/// few seconds on a host that does not answer.

#include <chrono>
#include <optional>
#include <string>

namespace ptrun::watchdog {

/// One HTTP GET's outcome: the status code and body, or why there is none.
struct FetchResult {
    int status = 0;    ///< 0 when no HTTP answer came
    std::string body;  ///< at most 64 MiB (a larger answer is an error)
    std::string
        error;  ///< "" when an answer came: "connection refused", "no answer within 5 s", ...
};

/// GET `path` from host:port (a numeric address or a name), with `within` for the whole
/// exchange (connect, send, read to the end).
FetchResult http_get(const std::string& host, std::uint16_t port, const std::string& path,
                     std::chrono::milliseconds within);

/// The /status document `json` as a table (a header of the job's state, then one row per worker),
/// and whether it says the job is healthy; nullopt when `json` is not a ptrun /status document.
struct StatusTable {
    std::string text;
    bool healthy = false;
};
std::optional<StatusTable> status_table(const std::string& json);

}  // namespace ptrun::watchdog
