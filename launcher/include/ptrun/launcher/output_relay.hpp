#pragma once
/// Copies one worker stream from a pipe to its log file and, whole lines at a time, to the
/// console with a "[host:rank] " prefix. Runs on the agent's event loop.

#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace ptrun::launcher {

struct RelayTarget {
    int log_fd = -1;      ///< raw copy of the stream, -1 for none (owned by the relay)
    int console_fd = -1;  ///< prefixed lines, -1 for none (not owned)
    std::string prefix;   ///< e.g. "[node1:3] "
};

class OutputRelay {
public:
    /// Takes ownership of `read_fd` (the pipe's read end) and starts reading.
    OutputRelay(boost::asio::io_context& io, int read_fd, RelayTarget target);
    ~OutputRelay();
    OutputRelay(const OutputRelay&) = delete;
    OutputRelay& operator=(const OutputRelay&) = delete;

    /// Reads whatever is left without blocking, flushes a trailing partial line, and stops.
    void drain();

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;  // shared with the pending read handler
};

/// Writes all of `data` to `fd`, retrying on EINTR and short writes; errors are ignored.
void write_all(int fd, const char* data, std::size_t size);

}  // namespace ptrun::launcher
