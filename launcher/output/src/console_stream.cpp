#include "ptrun/launcher/output/console_stream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

namespace ptrun::launcher {

namespace {
constexpr unsigned kMemoryDevicesMajor = 1;  // Linux devices.txt: /dev/null, /dev/zero, ...
}  // namespace

ConsoleStream::ConsoleStream(int fd, std::string name, std::size_t max_queued)
    : fd_(fd), name_(std::move(name)), max_queued_(max_queued), out_fd_(fd) {}

void ConsoleStream::open_locked() {
    // Deferred to the first write: a run that prints nothing pays nothing (bench/launch).
    opened_ = true;
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0 || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) return;
    // The memory devices (/dev/null, /dev/full, ...: major 1) never make a writer wait either.
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == kMemoryDevicesMajor) return;
    if (S_ISSOCK(st.st_mode)) {
        mode_ = Mode::Socket;
        return;
    }
    pipe_ = S_ISFIFO(st.st_mode);
    if (::fcntl(fd_, F_GETFL) & O_NONBLOCK) {
        mode_ = Mode::NonBlocking;  // already non-blocking (someone else's choice): use it as is
        return;
    }
    // A description of our own: O_NONBLOCK on the inherited one would reach the workers too.
    const std::string path = "/proc/self/fd/" + std::to_string(fd_);
    int own = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_APPEND);
    if (own < 0) return;  // e.g. no /proc: blocking writes, as before
    owned_fd_ = out_fd_ = own;
    mode_ = Mode::NonBlocking;
}

ConsoleStream::~ConsoleStream() {
    if (!flush(kFinalFlush)) {
        // A reader that is late, not gone: ptrun's own lines (the report) are worth a longer
        // wait than the workers' output, still bounded.
        std::unique_lock lock(mu_);
        drained_.wait_for(lock, kOwnFinalFlush, [this] { return head_ >= own_end_; });
    }
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    if (wake_fd_ >= 0) {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
    }
    if (drainer_.joinable()) drainer_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (owned_fd_ >= 0) ::close(owned_fd_);
}

std::size_t ConsoleStream::try_write(const char* data, std::size_t size) {
    if (!pipe_) return write_some(data, size);
    // A pipe takes a write of at most PIPE_BUF bytes whole or not at all: written as whole lines
    // in such pieces, no line is cut where another writer of the same pipe (ptrun's stdout and
    // stderr under 2>&1, or a worker writing it directly) could land inside it. Only a line
    // longer than PIPE_BUF goes in pieces.
    std::size_t done = 0;
    while (done < size) {
        const std::string_view rest(data + done, size - done);
        std::size_t piece = rest.size();
        if (piece > PIPE_BUF) {
            // Up to the last newline within PIPE_BUF; else the whole first (long) line; else all.
            auto end = rest.substr(0, PIPE_BUF).rfind('\n');
            if (end == std::string_view::npos) end = rest.find('\n');
            if (end != std::string_view::npos) piece = end + 1;
        }
        const std::size_t n = write_some(rest.data(), piece);
        done += n;
        if (n < piece) return done;
    }
    return done;
}

std::size_t ConsoleStream::write_some(const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = mode_ == Mode::Socket
                        ? ::send(out_fd_, data + done, size - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                        : ::write(out_fd_, data + done, size - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && mode_ != Mode::Direct)
            return done;
        return size;  // an error (EPIPE, EIO, ...): the bytes are lost, as any writer's would be
    }
    return done;
}

void ConsoleStream::write(std::string_view data) { write(data, false); }

void ConsoleStream::write_own(std::string_view data) { write(data, true); }

void ConsoleStream::write(std::string_view data, bool own) {
    std::lock_guard lock(mu_);
    if (!opened_) open_locked();
    if (queue_.size() == head_) {
        std::size_t n = try_write(data.data(), data.size());
        if (n == data.size()) return;
        data.remove_prefix(n);
    }
    enqueue_locked(data, own);
}

void ConsoleStream::enqueue_locked(std::string_view data, bool own) {
    const std::size_t bound = max_queued_ + (own ? kOwnReserve : 0);
    if (queue_.size() - head_ + data.size() > bound) {
        dropped_ += data.size();
        dropped_unnoted_ += data.size();
    } else {
        if (head_ > 0 && head_ == queue_.size()) {
            queue_.clear();
            head_ = 0;
            own_end_ = 0;
        }
        queue_.append(data);
        if (own) own_end_ = queue_.size();
    }
    if (!drainer_.joinable()) {
        wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        drainer_ = std::thread([this] { drain_loop(); });
    } else {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
    }
}

void ConsoleStream::drain_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
        if (queue_.size() > head_) {
            head_ += try_write(queue_.data() + head_, queue_.size() - head_);
            drained_.notify_all();  // progress: the destructor may wait for ptrun's own bytes
            if (head_ == queue_.size()) {
                queue_.clear();
                head_ = 0;
                own_end_ = 0;
                if (dropped_unnoted_ > 0) {
                    queue_ =
                        "\n[ptrun] " + std::to_string(dropped_unnoted_) + " bytes of output to " +
                        name_ +
                        " were dropped: it was not being read (ptrun never waits for its reader)\n";
                    dropped_unnoted_ = 0;
                    continue;
                }
                drained_.notify_all();
            }
        }
        const bool want_out = queue_.size() > head_;
        lock.unlock();
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {out_fd_, POLLOUT, 0}};
        int rc = ::poll(fds, want_out ? 2 : 1, -1);
        if (rc > 0 && (fds[0].revents & POLLIN)) {
            std::uint64_t count;
            [[maybe_unused]] auto n = ::read(wake_fd_, &count, sizeof count);
        }
        lock.lock();
        if (want_out && rc > 0 && (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL))) {
            queue_.clear();  // the reader is gone: nothing will ever take these bytes
            head_ = 0;
            own_end_ = 0;
            drained_.notify_all();
        }
    }
}

bool ConsoleStream::flush(std::chrono::milliseconds within) {
    std::unique_lock lock(mu_);
    return drained_.wait_for(lock, within, [this] { return queue_.size() == head_; });
}

std::uint64_t ConsoleStream::dropped() const {
    std::lock_guard lock(mu_);
    return dropped_;
}

}  // namespace ptrun::launcher
