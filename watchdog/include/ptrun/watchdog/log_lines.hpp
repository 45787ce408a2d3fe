#pragma once
/// `GET /logs?rank=R[&tail=N][&out=OFFSET][&err=OFFSET][&files=K]`: a node serves the lines one of
/// its ranks wrote to its log files in the run directory (stdout.log, stderr.log), each with the
/// wall-clock
/// time ptrun captured it. Times come from a sidecar beside each log file (stdout.times,
/// stderr.times: one fixed-size record per chunk ptrun read from the worker's pipe, its offset in
/// the log and the time), written by the output relay; lines a worker wrote itself (--redirects)
/// have no time. Everything is bounded: the query, the bytes read per file, the lines, each line.
///
/// A rank's log files change when its workers restart (a new attempt's directory) or a worker is
/// replaced (--restart-policy failed): the node numbers the rank's sets of files from 0, and
/// offsets belong to set K (files=K; without it, the newest). Reading an older set from its
/// offsets goes on into the next sets once it reached its end, so a follower sees every
/// attempt's lines in order.
///
/// The answer is text, one record a line (a worker line never holds '\n'):
///   ptrun-logs 1
///   A <rank> <files>                                  (the set the offsets belong to; none: 0)
///   F <rank> <out|err> <next offset> <kept: 0|1>      (one per stream)
///   L <rank> <out|err> <unix microseconds, or - when unknown> <the line's bytes>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::watchdog {

/// The most lines a request may ask for per rank, and the default.
inline constexpr std::size_t kMaxLogTail = 10000;
inline constexpr std::size_t kDefaultLogTail = 100;
/// The most bytes read from one log file per request.
inline constexpr std::size_t kMaxLogReadBytes = std::size_t{1} << 20;
/// A longer line is cut to this many bytes (the rest is skipped, not sent later).
inline constexpr std::size_t kMaxLogLineBytes = 16 * 1024;
/// The longest query string accepted.
inline constexpr std::size_t kMaxLogQuery = 256;

/// One parsed /logs query.
struct LogsQuery {
    int rank = 0;
    std::size_t tail = kDefaultLogTail;
    std::optional<std::uint64_t> out_after;  ///< stdout: lines from this offset on, not a tail
    std::optional<std::uint64_t> err_after;
    std::optional<std::uint64_t> files;  ///< the set of files the offsets belong to
    bool operator==(const LogsQuery&) const = default;
};

/// Parses a /logs query string (without '?'); nullopt with `error` set when it is malformed,
/// too long, repeats or lacks a parameter, or has one it does not know.
std::optional<LogsQuery> parse_logs_query(std::string_view query, std::string* error);

/// The query string for `query` (what the client sends).
std::string logs_query_text(const LogsQuery& query);

enum class LogStream { Out, Err };
/// "out" or "err".
const char* stream_name(LogStream stream);

/// One worker line.
struct LogLine {
    int rank = 0;
    LogStream stream = LogStream::Out;
    std::optional<std::int64_t> unix_us;  ///< when ptrun captured it; nullopt: unknown
    std::string text;                     ///< without its '\n'
    bool operator==(const LogLine&) const = default;
};

/// What one stream of one rank gave.
struct LogChunk {
    int rank = 0;
    LogStream stream = LogStream::Out;
    bool kept = false;              ///< the stream goes to a log file
    std::uint64_t next_offset = 0;  ///< ask from here for the lines after these
    std::vector<LogLine> lines;
    std::uint64_t files = 0;  ///< the set of the rank's files next_offset belongs to
    bool at_end = false;      ///< the read reached the file's end (not sent)
};

/// The times sidecar's path for the log file `log_path` (x.log -> x.times).
std::string log_times_path(const std::string& log_path);

/// Appends one sidecar record: the chunk starting at `offset` of the log was captured at
/// `unix_us`. 0, or the errno of the write that failed.
int append_log_time(int times_fd, std::uint64_t offset, std::int64_t unix_us);

/// Reads rank `rank`'s `stream` from `log_path` (and its times sidecar): from `after` on when
/// given (at most kMaxLogReadBytes, whole lines only), else its last `tail` whole lines within the
/// file's last kMaxLogReadBytes. A missing file gives no lines. `ended`: nothing more will be
/// written to it, so a last line without its '\n' is passed on too. Never throws for the files'
/// sake.
LogChunk read_log_chunk(const std::string& log_path, int rank, LogStream stream,
                        std::optional<std::uint64_t> after, std::size_t tail, bool ended = false);

/// The answer's text for `chunks`.
std::string logs_answer_text(const std::vector<LogChunk>& chunks);

/// Parses an answer; nullopt when it is not one (it came over the network: anything may be in
/// it). Lines of ranks other than `rank` are refused.
std::optional<std::vector<LogChunk>> parse_logs_answer(std::string_view text, int rank);

/// A line from a source (a node and rank), for the merge.
struct SourcedLine {
    std::string source;  ///< "host:rank"
    LogLine line;
};

/// Merges per-source runs of lines (each in its own order) into one in time order. A line with
/// no time takes its predecessor's in the same source (or sorts first), so each source keeps its
/// order; equal times keep the sources' order.
std::vector<SourcedLine> merge_by_time(std::vector<std::vector<SourcedLine>> sources);

}  // namespace ptrun::watchdog
