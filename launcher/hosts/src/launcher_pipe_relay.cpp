#include "ptrun/launcher/hosts/launcher_pipe_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <deque>
#include <system_error>

namespace ptrun::launcher {
namespace {

constexpr struct {
    char byte;
    int signo;
} kSignalBytes[] = {{'I', SIGINT}, {'T', SIGTERM}, {'H', SIGHUP}};

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

char launcher_signal_byte(int signo) {
    for (const auto& s : kSignalBytes) {
        if (s.signo == signo) return s.byte;
    }
    return 0;
}

std::optional<int> launcher_byte_signal(char byte) {
    for (const auto& s : kSignalBytes) {
        if (s.byte == byte) return s.signo;
    }
    return std::nullopt;
}

LauncherPipeRelay::LauncherPipeRelay(int fd) {
    int inner[2], wake[2];
    launcher_ = sys::Fd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!launcher_) fail("the launching ptrun's pipe");
    if (::pipe2(inner, O_CLOEXEC) != 0) fail("the launching ptrun's pipe's relay");
    sys::Fd inner_read(inner[0]);
    inner_write_ = sys::Fd(inner[1]);
    if (::pipe2(wake, O_CLOEXEC) != 0) fail("the launching ptrun's pipe's relay");
    wake_read_ = sys::Fd(wake[0]);
    wake_write_ = sys::Fd(wake[1]);
    if (::dup2(inner_read.get(), fd) < 0) fail("the launching ptrun's pipe's relay");
    thread_ = std::thread([this] { relay(); });
}

LauncherPipeRelay::~LauncherPipeRelay() {
    wake_write_.reset();  // the thread's poll() sees the wake-up pipe's end
    thread_.join();
}

void LauncherPipeRelay::relay() {
    using clock = std::chrono::steady_clock;
    std::deque<int> pending;  // read, not raised yet (a SIGINT waits out kInterruptGap)
    int accepted = 0;
    std::optional<clock::time_point> last_interrupt;
    for (;;) {
        int timeout_ms = -1;
        while (!pending.empty()) {
            const auto now = clock::now();
            if (pending.front() == SIGINT && last_interrupt &&
                now - *last_interrupt < kInterruptGap) {
                timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(
                                                  kInterruptGap - (now - *last_interrupt))
                                                  .count());
                break;
            }
            if (pending.front() == SIGINT) last_interrupt = now;
            ::kill(::getpid(), pending.front());
            pending.pop_front();
        }
        if (!launcher_ && pending.empty()) return;  // nothing more can come
        pollfd fds[2] = {{wake_read_.get(), POLLIN, 0}, {launcher_.get(), POLLIN, 0}};
        if (::poll(fds, launcher_ ? 2 : 1, timeout_ms) < 0) {
            if (errno == EINTR) continue;
            return;  // cannot happen with valid descriptors
        }
        if (fds[0].revents != 0) return;  // destroyed
        if (!launcher_ || fds[1].revents == 0) continue;
        char buf[64];
        ssize_t n;
        do {
            n = ::read(launcher_.get(), buf, sizeof buf);
        } while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN) continue;
        if (n <= 0) {  // its end (or the pipe is gone): the inner pipe ends too
            launcher_.reset();
            inner_write_.reset();
            continue;
        }
        for (ssize_t i = 0; i < n; ++i) {
            auto signo = launcher_byte_signal(buf[i]);
            if (signo && accepted < kMaxSignals) {
                ++accepted;
                pending.push_back(*signo);
            }
        }
    }
}

}  // namespace ptrun::launcher
