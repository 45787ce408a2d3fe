#include "ptrun/watchdog/timer_fifo.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <cstring>

namespace ptrun::watchdog {
namespace asio = boost::asio;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
    throw TimerFifoError("timer FIFO '" + path + "': " + what + ": " + std::strerror(err));
}

}  // namespace

/// Shared with the pending read's handler, which may outlive the TimerFifo by one completion.
struct TimerFifo::Reader : std::enable_shared_from_this<TimerFifo::Reader> {
    Reader(asio::io_context& io, int read_fd, int keep_fd, RequestHandler r, ErrorHandler e)
        : pipe(io, read_fd), keep_open(keep_fd), on_request(std::move(r)), on_error(std::move(e)) {}
    ~Reader() { ::close(keep_open); }

    void read_more() {
        pipe.async_read_some(
            asio::buffer(buffer),
            [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                if (self->stopped || ec == asio::error::operation_aborted) return;
                if (ec) {
                    // EOF cannot happen while keep_open lives; anything else would repeat at
                    // once, so reading stops (said once) rather than spin.
                    self->report(TimerFifoError("timer FIFO: reading stopped: " + ec.message()));
                    return;
                }
                self->consume(n);
                if (!self->stopped) self->read_more();
            });
    }

    void consume(std::size_t n) {
        for (std::size_t i = 0; i < n && !stopped; ++i) {
            const char c = buffer[i];
            if (c != '\n') {
                if (discarding) continue;
                if (line.size() >= kMaxTimerRequestBytes) {
                    discarding = true;
                    line.clear();
                    continue;
                }
                line += c;
                continue;
            }
            if (discarding) {
                discarding = false;
                report(TimerRequestError("timer request longer than " +
                                         std::to_string(kMaxTimerRequestBytes) + " bytes dropped"));
                continue;
            }
            handle_line();
            line.clear();
        }
    }

    void handle_line() {
        if (line.empty()) return;
        TimerRequest request;
        try {
            request = parse_timer_request(line);
        } catch (const TimerRequestError& e) {
            report(e);
            return;
        }
        try {
            on_request(request);
        } catch (...) {
            // A handler's failure must not stop the reader; the agent reports its own errors.
        }
    }

    void report(const std::exception& e) {
        try {
            on_error(e.what());
        } catch (...) {
        }
    }

    asio::posix::stream_descriptor pipe;
    int keep_open;
    RequestHandler on_request;
    ErrorHandler on_error;
    std::array<char, 16384> buffer{};
    std::string line;
    bool discarding = false;
    bool stopped = false;
};

TimerFifo::TimerFifo(asio::io_context& io, std::string path, RequestHandler on_request,
                     ErrorHandler on_error)
    : path_(std::move(path)) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
        if (!S_ISFIFO(st.st_mode)) {
            throw TimerFifoError("timer FIFO '" + path_ +
                                 "': exists and is not a FIFO; refusing to replace it");
        }
        if (::unlink(path_.c_str()) != 0) fail(path_, "cannot replace the old FIFO", errno);
    }
    if (::mkfifo(path_.c_str(), 0600) != 0) fail(path_, "cannot create it", errno);
    const int read_fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (read_fd < 0) {
        const int err = errno;
        ::unlink(path_.c_str());
        fail(path_, "cannot open it for reading", err);
    }
    const int keep_fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    struct stat opened {};
    if (keep_fd < 0 || ::fstat(read_fd, &opened) != 0 || !S_ISFIFO(opened.st_mode)) {
        const int err = keep_fd < 0 ? errno : EINVAL;
        if (keep_fd >= 0) ::close(keep_fd);
        ::close(read_fd);
        ::unlink(path_.c_str());
        fail(path_, "cannot open it", err);
    }
    reader_ =
        std::make_shared<Reader>(io, read_fd, keep_fd, std::move(on_request), std::move(on_error));
    reader_->read_more();
}

TimerFifo::~TimerFifo() {
    reader_->stopped = true;
    boost::system::error_code ignored;
    reader_->pipe.close(ignored);
    ::unlink(path_.c_str());
}

}  // namespace ptrun::watchdog
