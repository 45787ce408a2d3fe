// --from-launcher: the launching ptrun's pipe on stdin (host_fleet.hpp), or rather the inner pipe
// LauncherPipeRelay puts there (the signals the launcher forwards reach this process as signals):
// no data comes on it; its end (the launcher stopped, died, or its remote shell's connection
// dropped) stops the job.
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "agent_impl.hpp"

namespace ptrun::launcher {

void Agent::Impl::watch_launcher() {
    if (!launcher_pipe_fd && !launcher_pipe) return;
    if (!launcher_pipe) launcher_pipe.emplace(io, launcher_pipe_fd.release());
    launcher_pipe->async_wait(
        boost::asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
            if (ec || finished) return;
            char buf[512];
            ssize_t n;
            do {
                n = ::read(launcher_pipe->native_handle(), buf, sizeof buf);
            } while (n < 0 && errno == EINTR);
            if (n > 0 || (n < 0 && errno == EAGAIN)) {  // not for us: read on
                watch_launcher();
                return;
            }
            log->warn(
                "the launching ptrun's pipe (stdin) closed: it stopped, or it or its remote "
                "shell is gone; stopping as on SIGTERM");
            apply(SignalReceived{SIGTERM, true});
        });
}

}  // namespace ptrun::launcher
