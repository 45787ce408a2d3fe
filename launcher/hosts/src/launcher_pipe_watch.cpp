#include "ptrun/launcher/hosts/launcher_pipe_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ptrun::launcher {

LauncherPipeWatch::LauncherPipeWatch(int pipe, std::function<void()> on_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        throw std::system_error(errno, std::generic_category(), "the launcher pipe's watch");
    }
    wake_read_ = sys::Fd(fds[0]);
    wake_write_ = sys::Fd(fds[1]);
    thread_ = std::thread([this, pipe, on_end = std::move(on_end)] { watch(pipe, on_end); });
}

LauncherPipeWatch::~LauncherPipeWatch() {
    wake_write_.reset();  // the thread's poll() sees the wake-up pipe's end
    thread_.join();
}

void LauncherPipeWatch::watch(int pipe, const std::function<void()>& on_end) const {
    for (;;) {
        pollfd fds[2] = {{pipe, POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;  // cannot happen with valid descriptors; the agent watches it later
        }
        if (fds[1].revents != 0) return;  // destroyed: the agent takes over
        if (fds[0].revents & (POLLERR | POLLNVAL)) return;
        if (fds[0].revents & POLLHUP && !(fds[0].revents & POLLIN)) break;
        char buf[512];
        ssize_t n;
        do {
            n = ::read(pipe, buf, sizeof buf);
        } while (n < 0 && errno == EINTR);
        if (n == 0 || (n < 0 && errno != EAGAIN)) break;  // end of file (or the pipe is gone)
    }
    on_end();
}

}  // namespace ptrun::launcher
