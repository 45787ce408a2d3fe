#pragma once
/// One of ptrun's own output streams (stdout or stderr) written without ever blocking the caller,
/// so that a reader who stops reading (a full pipe, a stopped terminal) cannot stall the agent's
/// event loop: writes go out at once while the stream takes them, else into a bounded queue that a
/// helper thread drains as the stream becomes writable; what does not fit is dropped and counted,
/// and a note in the stream says so once it drains. Regular files are written directly (they
/// never wait for a reader). The stream's own file description is left as it is (workers that
/// inherit it still write in blocking mode): ptrun writes through a non-blocking description of
/// its own (/proc/self/fd reopened; MSG_DONTWAIT on a socket). Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "ptrun/launcher/output/run_log.hpp"

namespace ptrun::launcher {

class ConsoleStream {
  public:
    static constexpr std::size_t kDefaultMaxQueued = 4u << 20;
    /// Room beyond the bound kept for ptrun's own lines (write_own): a queue full of worker
    /// output never drops a report.
    static constexpr std::size_t kOwnReserve = 1u << 20;
    /// How long the destructor waits for a stalled reader before giving up on what is queued.
    static constexpr std::chrono::milliseconds kFinalFlush{1'000};
    /// How much longer it waits when ptrun's own lines (the report) are still queued.
    static constexpr std::chrono::milliseconds kOwnFinalFlush{3'000};

    /// `fd` stays owned by the caller; `name` ("stdout") is used in the dropped-output note.
    ConsoleStream(int fd, std::string name, std::size_t max_queued = kDefaultMaxQueued);
    /// flush(kFinalFlush), then stops the helper thread.
    ~ConsoleStream();
    ConsoleStream(const ConsoleStream&) = delete;
    ConsoleStream& operator=(const ConsoleStream&) = delete;

    /// Writes or queues all of `data` (or drops it whole when the queue is full); never blocks on
    /// a reader. Write errors other than "would block" (EPIPE, EIO) discard the data, as before.
    void write(std::string_view data);
    /// As write(), for ptrun's own lines (its log lines and reports): queued in kOwnReserve beyond
    /// the bound when worker output has filled the queue, and waited for up to kOwnFinalFlush
    /// more at the end.
    void write_own(std::string_view data);
    /// Blocks until everything queued has been written or `within` has passed; true when empty.
    bool flush(std::chrono::milliseconds within);
    /// Bytes dropped so far because the queue was full.
    std::uint64_t dropped() const;
    /// The stream's fd as given.
    int fd() const { return fd_; }

  private:
    enum class Mode { Direct, NonBlocking, Socket };

    /// Under mu_: picks how to write (direct, own non-blocking description, socket).
    void open_locked();
    /// Writes what it can of `data` without blocking; the bytes taken (all of them on an error).
    /// Into a pipe, whole lines in atomic pieces of at most PIPE_BUF bytes.
    std::size_t try_write(const char* data, std::size_t size);
    /// try_write's system calls: as much of `data` as the stream takes now.
    std::size_t write_some(const char* data, std::size_t size);
    /// write() or write_own().
    void write(std::string_view data, bool own);
    /// Under mu_: appends, or drops when over the bound (plus kOwnReserve when `own`); starts
    /// the helper thread.
    void enqueue_locked(std::string_view data, bool own);
    /// The helper thread: waits for writability (poll) and writes the queue out.
    void drain_loop();

    const int fd_;
    const std::string name_;
    const std::size_t max_queued_;
    Mode mode_ = Mode::Direct;
    bool pipe_ = false;  ///< the stream is a pipe (writes of up to PIPE_BUF bytes are atomic)
    bool opened_ = false;
    int out_fd_ = -1;    ///< what ptrun writes to (a non-blocking description, or fd_)
    int owned_fd_ = -1;  ///< out_fd_ when ptrun opened it
    int wake_fd_ = -1;   ///< eventfd: new data or stop
    mutable std::mutex mu_;
    std::condition_variable drained_;
    std::string queue_;
    std::size_t head_ = 0;     ///< bytes of queue_ already written
    std::size_t own_end_ = 0;  ///< queue_ holds ptrun's own bytes up to here (0: none)
    std::uint64_t dropped_ = 0;
    std::uint64_t dropped_unnoted_ = 0;
    bool stopping_ = false;
    std::thread drainer_;
};

/// ptrun's own stdout and stderr as ConsoleStreams: `main` makes one and shares it between the
/// logger (console_log_sink.hpp) and the agent (worker output, reports).
struct Console {
    Console() : Console(1, 2) {}
    /// Other descriptors than 1 and 2 (tests capture a report); they stay owned by the caller.
    Console(int out_fd, int err_fd) : out(out_fd, "stdout"), err(err_fd, "stderr") {}
    ConsoleStream out;
    ConsoleStream err;
    /// RUN_DIR/ptrun.log: what ptrun itself says on `err`, with times (run_log.hpp).
    RunLog run_log;

    /// A report or other text of ptrun's own: on stderr and in the run log.
    void say(std::string_view text) {
        err.write_own(text);
        run_log.write(text);
    }
};

}  // namespace ptrun::launcher
