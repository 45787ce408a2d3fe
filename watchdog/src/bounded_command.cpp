#include "ptrun/watchdog/bounded_command.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>

#include "ptrun/sys/c_array.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace ptrun::watchdog {
namespace asio = boost::asio;

struct BoundedCommand::Io {
    explicit Io(asio::io_context& c) : context(c), output(c), pidfd(c), deadline(c) {}
    asio::io_context& context;
    asio::posix::stream_descriptor output;
    asio::posix::stream_descriptor pidfd;
    asio::steady_timer deadline;
    std::array<char, 8192> buffer{};
};

namespace {

/// posix_spawn of argv with stdout and stderr into `out_fd`; errno-style code or 0.
int spawn(pid_t* pid, std::vector<std::string>& argv, std::vector<std::string>& env, int out_fd) {
    auto c_argv = sys::c_array(argv);
    auto c_env = sys::c_array(env);
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    const int rc = ::posix_spawn(pid, c_argv[0], &actions, &attr, c_argv.data(), c_env.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

}  // namespace

BoundedCommand::BoundedCommand(asio::io_context& io, CommandLimits limits, Done done)
    : io_(std::make_unique<Io>(io)), limits_(limits), done_(std::move(done)) {}

std::shared_ptr<BoundedCommand> BoundedCommand::start(asio::io_context& io,
                                                      std::vector<std::string> argv,
                                                      std::vector<std::string> env,
                                                      CommandLimits limits, Done done) {
    std::shared_ptr<BoundedCommand> self(new BoundedCommand(io, limits, std::move(done)));
    self->launch(std::move(argv), std::move(env));
    return self;
}

void BoundedCommand::launch(std::vector<std::string> argv, std::vector<std::string> env) {
    auto fail = [this](std::string why) {
        outcome_.error = std::move(why);
        output_closed_ = exited_ = true;
        asio::post(io_->context, [self = shared_from_this()] { self->maybe_finish(); });
    };
    if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
        return fail("not an absolute program path");
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
    const int rc = spawn(&pid_, argv, env, fds[1]);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        pid_ = 0;
        return fail("cannot run " + argv[0] + ": " + std::strerror(rc));
    }
    // Same thread as the agent's reaper, so the child cannot have been reaped yet.
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    io_->output.assign(fds[0]);
    read_output();
    if (pidfd >= 0) {
        io_->pidfd.assign(pidfd);
        watch_exit();
    }
    io_->deadline.expires_after(limits_.timeout);
    io_->deadline.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->finished_) return;
        self->outcome_.timed_out = true;
        self->kill_child();
    });
}

void BoundedCommand::read_output() {
    io_->output.async_read_some(
        asio::buffer(io_->buffer),
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            if (n > 0) {
                auto& out = self->outcome_.output;
                const std::size_t room = self->limits_.max_output - out.size();
                out.append(self->io_->buffer.data(), std::min(n, room));
                if (n > room) self->outcome_.truncated = true;
            }
            if (ec) {  // eof, or the descriptor closed: the output is complete
                self->output_closed_ = true;
                boost::system::error_code ignored;
                self->io_->output.close(ignored);
                if (!self->io_->pidfd.is_open()) self->exited_ = true;  // no pidfd: EOF is the end
                self->maybe_finish();
                return;
            }
            self->read_output();
        });
}

void BoundedCommand::watch_exit() {
    io_->pidfd.async_wait(asio::posix::descriptor_base::wait_read,
                          [self = shared_from_this()](boost::system::error_code ec) {
                              if (ec == asio::error::operation_aborted || self->finished_) return;
                              siginfo_t info{};
                              const int fd = self->io_->pidfd.native_handle();
                              if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(fd),
                                           &info, WEXITED | WNOHANG) == 0 &&
                                  info.si_pid != 0 && info.si_code == CLD_EXITED) {
                                  self->outcome_.exit_code = info.si_status;
                              }
                              self->exited_ = true;
                              self->maybe_finish();
                          });
}

void BoundedCommand::kill_child() {
    if (io_->pidfd.is_open()) {
        ::syscall(SYS_pidfd_send_signal, io_->pidfd.native_handle(), SIGKILL, nullptr, 0);
    } else if (pid_ > 0 && !output_closed_) {
        ::kill(pid_, SIGKILL);  // no pidfd (old kernel): the output is still open, so it runs
    }
}

void BoundedCommand::cancel() {
    if (finished_) return;
    outcome_.cancelled = true;
    kill_child();
}

void BoundedCommand::maybe_finish() {
    if (finished_ || !output_closed_ || !exited_) return;
    finished_ = true;
    io_->deadline.cancel();
    boost::system::error_code ignored;
    io_->pidfd.close(ignored);
    Done done = std::move(done_);
    if (done) done(std::move(outcome_));
}

BoundedCommand::~BoundedCommand() {
    if (!finished_) kill_child();
}

}  // namespace ptrun::watchdog
