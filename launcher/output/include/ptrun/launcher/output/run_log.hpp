#pragma once
/// The run's own log, RUN_DIR/ptrun.log: every line ptrun prints (its log lines and reports, not
/// the workers' output), each prefixed with its UTC time, plus what only the log keeps (the exit
/// code). Lines written before the run directory exists are kept (bounded) and written first.
/// Any thread may write.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace ptrun::launcher {

/// The run log's name in the run directory.
inline constexpr const char* kRunLogName = "ptrun.log";
/// The start-up timeline's Chrome trace beside it (launcher/timeline/chrome_trace.hpp).
inline constexpr const char* kTraceName = "trace.json";

class RunLog {
  public:
    /// What is kept before open(): beyond it, the oldest lines are dropped (and said so).
    static constexpr std::size_t kMaxBacklog = 256 * 1024;

    RunLog() = default;
    ~RunLog();
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;

    /// Starts writing to `path` (created, appended to), the lines kept so far first. "" on
    /// success, else why (strerror), and the log stays off.
    std::string open(const std::string& path);
    /// Appends `text` (one or more lines; a missing final newline is added), each line prefixed
    /// with the current UTC time, "2026-11-27T13:05:01.123Z ". Terminal control sequences (the
    /// status line, colours) are not kept. After a failed write the log stops (writes_failed()).
    void write(std::string_view text);
    /// This run has no run directory (no --log-dir, no log files): what was kept goes, and later
    /// lines are neither stamped nor kept. open() after it still opens the log.
    void discard();
    /// The file written to, "" before open().
    std::string path() const;
    /// errno of the first failed write, 0 when none.
    int writes_failed() const;

  private:
    void append_locked(const std::string& stamped);

    mutable std::mutex mu_;
    std::atomic<bool> discarded_{false};  ///< discard() and no open() since: write() returns
    int fd_ = -1;
    std::string path_;
    std::string backlog_;
    std::size_t dropped_ = 0;  ///< backlog lines dropped before open()
    int write_errno_ = 0;
};

/// `text` with each line prefixed by `stamp` and ANSI escape sequences and carriage returns
/// removed; ends with a newline.
std::string stamp_lines(std::string_view text, std::string_view stamp);

/// The current UTC time as "2026-11-27T13:05:01.123Z".
std::string utc_now_text();
/// `time` as "2026-11-27T13:05:01.123Z".
std::string utc_text(std::chrono::system_clock::time_point time);

}  // namespace ptrun::launcher
