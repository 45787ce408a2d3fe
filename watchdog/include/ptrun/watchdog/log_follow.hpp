#pragma once
/// `GET /logs?seen=SEQ&wait=MS`: the long-poll behind `ptrun logs --follow`. A node counts the
/// writes to the workers' log files (its output relays', and inotify's word of those a worker
/// makes itself: log_followers.hpp); the request is held until that count differs from SEQ, the
/// node's job ends, or MS pass (at most kMaxLogWait), then answered with the count and, once the
/// job ended, its exit code. The client then reads each rank's new lines with
/// GET /logs?rank=R&out=OFFSET&err=OFFSET&files=K (log_lines.hpp). The server holds at most
/// kMaxLogFollowers such requests; beyond that it answers 503.
///
/// The answer is text:
///   ptrun-logs-wait 1
///   S <count>
///   X <exit code>          (only once the node's job ended)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptrun::watchdog {

/// The longest a long-poll is held: below the health endpoint's 5 s connection deadline.
inline constexpr std::chrono::milliseconds kMaxLogWait{3000};
/// Long-polls a node holds at once (the health endpoint's other clients keep their slots).
inline constexpr std::size_t kMaxLogFollowers = 8;
/// After its job ends, a node that served a long-poll keeps answering this long, so that a
/// follower reads the last lines and the exit code.
inline constexpr std::chrono::milliseconds kFollowerLinger{1000};

struct LogsWaitQuery {
    std::uint64_t seen = 0;
    std::chrono::milliseconds wait{0};
    bool operator==(const LogsWaitQuery&) const = default;
};

/// Whether `query` (without '?') is a long-poll (it starts with "seen=") rather than a rank's
/// lines.
bool is_logs_wait_query(std::string_view query);

/// Parses "seen=SEQ&wait=MS" (both required, in that order, MS up to kMaxLogWait); nullopt with
/// `error` set otherwise.
std::optional<LogsWaitQuery> parse_logs_wait_query(std::string_view query, std::string* error);

/// The query string for `query`.
std::string logs_wait_query_text(const LogsWaitQuery& query);

struct LogsWaitAnswer {
    std::uint64_t count = 0;
    std::optional<int> exit_code;  ///< set once the node's job ended
    bool operator==(const LogsWaitAnswer&) const = default;
};

/// The answer's text.
std::string logs_wait_answer_text(const LogsWaitAnswer& answer);

/// Parses an answer; nullopt when it is not one (it came over the network).
std::optional<LogsWaitAnswer> parse_logs_wait_answer(std::string_view text);

}  // namespace ptrun::watchdog
