#pragma once
/// TimerFifo: the named pipe torch's FileTimerClient writes to, read on the agent's io_context.
///
/// FileTimerClient opens the FIFO with O_WRONLY | O_NONBLOCK, writes one request line (at most
/// PIPE_BUF bytes, so the kernel keeps it whole among concurrent writers) and closes it. The
/// reader keeps a write end of its own open, so the read end never sees end-of-file when the
/// last worker closes (no busy wake-ups, no re-open), and clients never get ENXIO while the
/// TimerFifo lives. Reads are non-blocking and driven by the io_context: nothing polls. Each
/// complete line is parsed (timer_request.hpp) and handed to `on_request`; a malformed or
/// over-long line goes to `on_error` with a short reason and is dropped; reading goes on. (A
/// read error, which the kept write end rules out in practice, is reported and ends reading.)
///
/// Use (launcher/src/agent_watchdog.cpp): with TORCHELASTIC_ENABLE_FILE_TIMER=1 the agent creates
/// one TimerFifo at TORCHELASTIC_TIMER_FILE (or a fresh path it puts there for the workers) before
/// the first attempt, feeds on_request into a TimerTable, and keeps it for the whole run.

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "ptrun/watchdog/timer_request.hpp"

namespace ptrun::watchdog {

/// The FIFO cannot be made or opened; the message names the path.
struct TimerFifoError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class TimerFifo {
  public:
    using RequestHandler = std::function<void(const TimerRequest&)>;
    using ErrorHandler = std::function<void(const std::string& reason)>;

    /// Makes the FIFO at `path` (mode 0600; an existing FIFO there is replaced, as torch's server
    /// does; any other existing file is refused) and starts reading on `io`. The handlers run on
    /// `io`'s thread. Throws TimerFifoError.
    TimerFifo(boost::asio::io_context& io, std::string path, RequestHandler on_request,
              ErrorHandler on_error);
    /// Stops reading (no handler runs afterwards) and removes the FIFO.
    ~TimerFifo();
    TimerFifo(const TimerFifo&) = delete;
    TimerFifo& operator=(const TimerFifo&) = delete;

    const std::string& path() const { return path_; }

  private:
    struct Reader;
    std::string path_;
    std::shared_ptr<Reader> reader_;
};

}  // namespace ptrun::watchdog
