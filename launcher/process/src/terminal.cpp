#include "ptrun/launcher/process/terminal.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>

namespace ptrun::launcher {
namespace {

/// Blocks SIGTTOU in this thread for its lifetime: tcsetpgrp and tcsetattr from a background
/// group (ptrun, while a worker holds the terminal) would otherwise stop ptrun.
class NoTtou {
  public:
    NoTtou() {
        sigset_t ttou;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        ::pthread_sigmask(SIG_BLOCK, &ttou, &old_);
    }
    ~NoTtou() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
    NoTtou(const NoTtou&) = delete;
    NoTtou& operator=(const NoTtou&) = delete;

  private:
    sigset_t old_{};
};

}  // namespace

TerminalLender::~TerminalLender() {
    if (holder_ != 0) reclaim(holder_);
    if (fd_ >= 0) ::close(fd_);
}

TerminalLender::Outcome TerminalLender::lend(pid_t pgid) {
    if (fd_ < 0) {
        fd_ = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd_ < 0) return Outcome::NotOurs;
    }
    const pid_t foreground = ::tcgetpgrp(fd_);
    if (holder_ != 0 && foreground == holder_) return Outcome::Busy;
    if (foreground != ::getpgrp()) {
        holder_ = 0;  // whoever held it is gone, or ptrun itself is in the background
        return Outcome::NotOurs;
    }
    NoTtou no_ttou;
    saved_ok_ = ::tcgetattr(fd_, &saved_) == 0;
    if (::tcsetpgrp(fd_, pgid) != 0) return Outcome::NotOurs;
    holder_ = pgid;
    return Outcome::Lent;
}

bool TerminalLender::reclaim(pid_t pgid) {
    if (holder_ == 0 || holder_ != pgid) return false;
    holder_ = 0;
    NoTtou no_ttou;
    ::tcsetpgrp(fd_, ::getpgrp());
    if (saved_ok_) ::tcsetattr(fd_, TCSADRAIN, &saved_);
    return true;
}

}  // namespace ptrun::launcher
