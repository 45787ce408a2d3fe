#pragma once
/// Copies one worker stream from a pipe to its log file (raw), to ptrun's console with a
/// "[host:rank] " prefix (or --log-line-prefix-template's), and its lines that match
/// --duplicate-*-filters to a shared file. Runs on the agent's event loop and never blocks it: the
/// console is a ConsoleStream (bounded queue), and memory is bounded too: a line longer than
/// kMaxConsoleLine is passed on in pieces, and '\r' ends a console line like '\n' does, so progress
/// bars (tqdm) show live, each update prefixed.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace ptrun::launcher {

class ConsoleStream;

/// Longest console line the relay holds; a longer line is passed on in pieces of this size.
inline constexpr std::size_t kMaxConsoleLine = 64 * 1024;

/// A log file several relays append to (--duplicate-*-filters' filtered_*.log); closed with the
/// last relay holding it.
struct SharedLog {
    SharedLog(int log_fd, std::string log_path) : fd(log_fd), path(std::move(log_path)) {}
    ~SharedLog();
    SharedLog(const SharedLog&) = delete;
    SharedLog& operator=(const SharedLog&) = delete;
    const int fd;
    const std::string path;
};

struct RelayTarget {
    int log_fd = -1;       ///< raw copy of the stream, -1 for none (owned by the relay)
    std::string log_path;  ///< named when writing it fails
    /// With log_fd: the times sidecar made beside it (log_lines.hpp: each chunk's capture time,
    /// for `ptrun logs`); "" for none. A sidecar that cannot be written is given up silently.
    std::string times_path;
    ConsoleStream* console = nullptr;  ///< prefixed lines, null for none (not owned)
    std::string prefix;                ///< e.g. "[node1:3] "
    /// Called once per relay when a write to the log file fails (path, errno); the relay keeps
    /// trying later writes (space may come back).
    std::function<void(const std::string&, int)> on_log_error;
    /// Called after each chunk written to the log file (`ptrun logs --follow` wakes on it).
    std::function<void()> on_logged;
    /// Lines holding any of `filters` also go, prefixed with `filtered_prefix`, to
    /// `filtered_log` (when both are set).
    std::shared_ptr<SharedLog> filtered_log;
    std::vector<std::string> filters;
    std::string filtered_prefix;
    /// The prefixes are known only once the worker runs (a template's ${pid}): the relay reads
    /// nothing until begin() gives them, so no line goes out with a prefix still to come.
    bool wait_for_prefix = false;
};

class OutputRelay {
  public:
    /// Takes ownership of `read_fd` (the pipe's read end) and starts reading.
    OutputRelay(boost::asio::io_context& io, int read_fd, RelayTarget target);
    ~OutputRelay();
    OutputRelay(const OutputRelay&) = delete;
    OutputRelay& operator=(const OutputRelay&) = delete;

    /// For a relay made with `wait_for_prefix`: sets the console and filtered lines' prefixes and
    /// starts reading. Does nothing once reading has started or the relay has drained.
    void begin(std::string prefix, std::string filtered_prefix);

    /// Reads whatever is left without blocking, flushes a trailing partial line, and stops.
    void drain();

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;  // shared with the pending read handler
};

/// Writes all of `data` to `fd`, retrying on EINTR and short writes; 0, or the errno of the
/// write that failed.
int write_all(int fd, const char* data, std::size_t size);

/// Splits worker output into console lines (pure; the relay's line logic): '\n' and '\r' end a
/// line, each line is prefixed, a line reaching `max_line` bytes is passed on as a piece ending in
/// '\n' (a '\n' right after a piece adds nothing), and "\r\n" is passed on as one line end.
class ConsoleLines {
  public:
    ConsoleLines(std::string prefix, std::size_t max_line = kMaxConsoleLine);
    /// Appends the complete console lines in `data` to `out`; keeps the rest (at most max_line).
    void feed(const char* data, std::size_t size, std::string& out);
    /// Appends the held partial line, if any, ended with '\n'.
    void finish(std::string& out);

  private:
    std::string prefix_;
    std::size_t max_line_;
    std::string partial_;
    /// How the last console line ended, when nothing has followed it yet.
    enum class Ended { Newline, Cr, Piece };
    Ended ended_ = Ended::Newline;
};

}  // namespace ptrun::launcher
