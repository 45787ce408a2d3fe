#include "ptrun/launcher/hosts/host_fleet.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <optional>

#include "ptrun/launcher/hosts/host_lines.hpp"
#include "ptrun/launcher/hosts/launcher_pipe_relay.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/output_relay.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/process/exit_status.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {
namespace {
namespace asio = boost::asio;

/// How many of a remote shell's stderr lines before its ptrun started are kept for the error.
constexpr std::size_t kKeptErrorLines = 3;
/// How long output may still come once every remote shell has exited.
constexpr std::chrono::milliseconds kDrain{2000};
/// Two SIGINTs closer than this are one Ctrl-C delivered twice (as the agent counts them).
constexpr std::chrono::milliseconds kSameInterrupt{100};

struct Stream {
    Stream(asio::io_context& io, int fd) : pipe(io, fd), lines(kMaxConsoleLine) {}
    asio::posix::stream_descriptor pipe;
    LineSplitter lines;
    std::array<char, 65536> buffer{};
    bool open = true;
};

struct Host {
    std::string name;
    pid_t pid = 0;
    sys::Fd stdin_write;  ///< closed: its ptrun stops; a signal's byte: raised there
    std::unique_ptr<Stream> out, err;
    std::optional<asio::posix::stream_descriptor> pidfd;
    bool started = false;
    bool exited = false;
    bool signaled = false;  ///< `code` is 128 + the signal that ended it
    int code = 0;
    std::deque<std::string> early_errors;  ///< stderr lines before its ptrun started
};

class Fleet {
  public:
    Fleet(const HostsPlan& plan, const FleetOptions& options, std::shared_ptr<Console> console,
          std::shared_ptr<spdlog::logger> log)
        : plan_(plan),
          options_(options),
          console_(std::move(console)),
          log_(std::move(log)),
          signals_(io_, SIGINT, SIGTERM, SIGHUP),
          start_timer_(io_),
          stop_timer_(io_),
          drain_timer_(io_) {}

    ~Fleet() {
        for (auto& h : hosts_) {
            if (h.pid > 0 && !h.exited) {  // only after an exception: never leave one behind
                ::kill(-h.pid, SIGKILL);
                ::waitpid(h.pid, nullptr, 0);
            }
        }
    }

    int run() {
        log_->info("starting ptrun on {} host{} through '{}' (rendezvous {}, run id {})",
                   plan_.hosts.size(), plan_.hosts.size() == 1 ? "" : "s",
                   printable(options_.shell_text), printable(plan_.endpoint),
                   printable(plan_.run_id));
        wait_signal();
        hosts_.reserve(plan_.hosts.size());
        for (const auto& launch : plan_.hosts) {
            hosts_.push_back(Host{});
            hosts_.back().name = launch.name;
            if (stopping_) {  // an earlier host could not be started: start no more
                hosts_.back().exited = true;
                continue;
            }
            start(hosts_.size() - 1, launch.argv);
        }
        start_timer_.expires_after(options_.start_deadline);
        start_timer_.async_wait([this](boost::system::error_code ec) {
            if (!ec) start_deadline_passed();
        });
        if (!all_done()) io_.run();
        if (signal_code_) return *signal_code_;
        return first_failure_ ? *first_failure_ : 0;
    }

  private:
    void start(std::size_t i, const std::vector<std::string>& argv) {
        Host& h = hosts_[i];
        int in[2], out[2], err[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
            ::pipe2(err, O_CLOEXEC) != 0) {
            throw std::runtime_error(std::string("cannot make the pipes of a remote shell: ") +
                                     std::strerror(errno));
        }
        sys::Fd in_read(in[0]), out_write(out[1]), err_write(err[1]);
        h.stdin_write = sys::Fd(in[1]);
        // A signal's byte never blocks this loop (a pipe holds 64 KiB; it writes a few bytes).
        ::fcntl(h.stdin_write.get(), F_SETFL, O_NONBLOCK);
        h.out = std::make_unique<Stream>(io_, out[0]);
        h.err = std::make_unique<Stream>(io_, err[0]);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0);
        posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
        posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        // Its own process group: a Ctrl-C at the terminal reaches this ptrun alone, which stops
        // every host through the pipes; default dispositions and an empty mask, as a shell gives.
        posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setpgroup(&attr, 0);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        std::vector<char*> envp;
        for (const auto& e : options_.env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        const int rc = ::posix_spawnp(&h.pid, args[0], &actions, &attr, args.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) {
            h.pid = 0;
            h.exited = true;
            h.out->open = h.err->open = false;
            fail_to_start(
                h, 1,
                "cannot run the remote shell '" + printable(argv[0]) + "': " + std::strerror(rc));
            return;
        }
        const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, h.pid, 0));
        if (pidfd < 0) {
            throw std::runtime_error(std::string("pidfd_open of a remote shell: ") +
                                     std::strerror(errno));
        }
        h.pidfd.emplace(io_, pidfd);
        h.pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this, i](boost::system::error_code) { reap(i); });
        read(i, *h.out, false);
        read(i, *h.err, true);
    }

    void read(std::size_t i, Stream& s, bool is_err) {
        s.pipe.async_read_some(asio::buffer(s.buffer),
                               [this, i, &s, is_err](boost::system::error_code ec, std::size_t n) {
                                   if (n > 0) {
                                       for (auto& line : s.lines.feed({s.buffer.data(), n}))
                                           show(i, line, is_err);
                                   }
                                   if (ec || n == 0) {
                                       close_stream(i, s, is_err);
                                       return;
                                   }
                                   read(i, s, is_err);
                               });
    }

    void close_stream(std::size_t i, Stream& s, bool is_err) {
        if (!s.open) return;
        if (auto rest = s.lines.rest(); !rest.empty()) show(i, rest, is_err);
        s.open = false;
        boost::system::error_code ignored;
        s.pipe.close(ignored);
        maybe_finish();
    }

    void show(std::size_t i, const std::string& line, bool is_err) {
        Host& h = hosts_[i];
        if (!is_err && !h.started && line == kAgentStartedLine) {
            h.started = true;
            return;
        }
        if (is_err && !h.started) {  // ssh ends its own messages with "\r\n"
            h.early_errors.push_back(line.ends_with('\r') ? line.substr(0, line.size() - 1) : line);
            if (h.early_errors.size() > kKeptErrorLines) h.early_errors.pop_front();
        }
        const std::string text = host_line(h.name, line) + "\n";
        (is_err ? console_->err : console_->out).write(text);
    }

    void reap(std::size_t i) {
        Host& h = hosts_[i];
        int status = 0;
        pid_t got;
        do {
            got = ::waitpid(h.pid, &status, 0);
        } while (got < 0 && errno == EINTR);
        h.exited = true;
        h.signaled = got >= 0 && WIFSIGNALED(status);
        h.code = got < 0 ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        boost::system::error_code ignored;
        h.pidfd->close(ignored);
        // Whatever it wrote before exiting is in the pipes: read it before judging.
        drain(i, *h.out, false);
        drain(i, *h.err, true);
        if (!stopping_ && (h.code != 0 || !h.started)) {
            if (!h.started) {
                fail_to_start(h, h.code == 0 ? 1 : h.code,
                              "the remote shell " + exit_text(h) + " before ptrun started there");
            } else {
                log_->info("host {}: ptrun exited with code {}; stopping the other hosts",
                           printable(h.name), h.code);
                failed(h.code);
            }
        }
        maybe_finish();
    }

    /// Reads what the pipe holds now without waiting; a pipe a grandchild keeps open is read on.
    void drain(std::size_t i, Stream& s, bool is_err) {
        if (!s.open) return;
        boost::system::error_code ec;
        s.pipe.non_blocking(true, ec);
        for (;;) {
            const std::size_t n = s.pipe.read_some(asio::buffer(s.buffer), ec);
            for (auto& line : s.lines.feed({s.buffer.data(), n})) show(i, line, is_err);
            if (ec == asio::error::eof) close_stream(i, s, is_err);
            if (ec || n == 0) break;
        }
    }

    static std::string exit_text(const Host& h) {
        if (h.signaled) return "was killed by signal " + std::to_string(h.code - 128);
        return "exited with code " + std::to_string(h.code);
    }

    void fail_to_start(Host& h, int code, const std::string& why) {
        std::string text = "ptrun: error: host " + printable(h.name) + ": " + why;
        std::string said;
        for (const auto& line : h.early_errors) said += (said.empty() ? "" : " / ") + line;
        if (!said.empty()) text += ": " + printable(said);
        text += " (--remote-shell '" + printable(options_.shell_text) + "')\n";
        console_->say(text);
        failed(code);
    }

    void failed(int code) {
        if (!first_failure_) first_failure_ = code;
        stop_all();
    }

    /// Stops every host's ptrun: a failure closes their pipes (each stops as on SIGTERM); a
    /// signal (`signo`) is forwarded on them, and they stay open for the next one.
    void stop_all(int signo = 0) {
        if (stopping_) return;
        stopping_ = true;
        start_timer_.cancel();
        if (signo != 0) {
            forward(signo);
        } else {
            for (auto& h : hosts_) h.stdin_write.reset();  // each host's ptrun stops its workers
            pipes_closed_ = true;
        }
        stop_timer_.expires_after(options_.stop_deadline);
        stop_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            for (auto& h : hosts_) {
                if (h.exited) continue;
                log_->warn("host {}: its remote shell still runs {} s after the stop; killing it",
                           printable(h.name),
                           std::chrono::duration_cast<std::chrono::seconds>(options_.stop_deadline)
                               .count());
                ::kill(-h.pid, SIGKILL);
            }
        });
    }

    void start_deadline_passed() {
        if (stopping_) return;
        const auto seconds =
            std::chrono::duration_cast<std::chrono::seconds>(options_.start_deadline).count();
        for (auto& h : hosts_) {
            if (h.started || h.exited) continue;
            ::kill(-h.pid, SIGKILL);
            fail_to_start(h, 1,
                          "ptrun did not start there within " + std::to_string(seconds) + " s");
        }
    }

    /// One byte on every pipe (launcher_pipe_relay.hpp): each host's ptrun raises `signo`.
    void forward(int signo) {
        const char byte = launcher_signal_byte(signo);
        for (auto& h : hosts_) {
            if (!h.stdin_write || h.exited) continue;
            [[maybe_unused]] auto ignored = ::write(h.stdin_write.get(), &byte, 1);
        }
    }

    void wait_signal() {
        signals_.async_wait([this](boost::system::error_code ec, int signo) {
            if (ec) return;
            on_signal(signo);
            wait_signal();
        });
    }

    /// As on one node: the first signal stops every host's workers gracefully, the next ones
    /// reach every host's ptrun too (a second Ctrl-C there kills its workers at once).
    void on_signal(int signo) {
        if (signo == SIGINT) {
            const auto now = std::chrono::steady_clock::now();
            if (last_interrupt_ && now - *last_interrupt_ < kSameInterrupt) {
                log_->info("received SIGINT again within {} ms: the same Ctrl-C, delivered twice",
                           kSameInterrupt.count());
                return;
            }
            last_interrupt_ = now;
            ++interrupts_;
        }
        if (!stopping_) {
            log_->info("received {}: stopping every host's ptrun (each gets {}{})",
                       signal_name(signo), signal_name(signo),
                       signo == SIGINT ? "; press Ctrl-C again to kill the workers at once" : "");
            signal_code_ = 128 + signo;
            stop_all(signo);
        } else if (pipes_closed_) {
            log_->info("received {}: every host's ptrun is already stopping", signal_name(signo));
        } else if (signo == SIGINT && interrupts_ >= 2) {
            log_->info("received {} again: every host's ptrun kills its workers now (SIGKILL)",
                       signal_name(signo));
            forward(signo);
        } else {
            log_->info("received {}: forwarding it to every host's ptrun", signal_name(signo));
            forward(signo);
        }
    }

    bool all_done() const {
        for (const auto& h : hosts_) {
            if (!h.exited || (h.out && h.out->open) || (h.err && h.err->open)) return false;
        }
        return true;
    }

    void maybe_finish() {
        if (all_done()) {
            finish();
            return;
        }
        for (const auto& h : hosts_) {
            if (!h.exited) return;
        }
        // Every remote shell is gone; a pipe left open by something they started ends soon.
        drain_timer_.expires_after(kDrain);
        drain_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            for (std::size_t i = 0; i < hosts_.size(); ++i) {
                if (hosts_[i].out) close_stream(i, *hosts_[i].out, false);
                if (hosts_[i].err) close_stream(i, *hosts_[i].err, true);
            }
        });
    }

    void finish() {
        if (finished_) return;
        finished_ = true;
        start_timer_.cancel();
        stop_timer_.cancel();
        drain_timer_.cancel();
        boost::system::error_code ignored;
        signals_.cancel(ignored);
        io_.stop();
    }

    const HostsPlan& plan_;
    const FleetOptions& options_;
    std::shared_ptr<Console> console_;
    std::shared_ptr<spdlog::logger> log_;
    asio::io_context io_{1};
    asio::signal_set signals_;
    asio::steady_timer start_timer_;
    asio::steady_timer stop_timer_;
    asio::steady_timer drain_timer_;
    std::vector<Host> hosts_;
    bool stopping_ = false;
    bool pipes_closed_ = false;  ///< stopped by a failure: no signal reaches the hosts any more
    bool finished_ = false;
    int interrupts_ = 0;  ///< SIGINTs received (copies within kSameInterrupt not counted)
    std::optional<std::chrono::steady_clock::time_point> last_interrupt_;
    std::optional<int> signal_code_;
    std::optional<int> first_failure_;
};

}  // namespace

int run_host_fleet(const HostsPlan& plan, const FleetOptions& options,
                   const std::shared_ptr<Console>& console,
                   const std::shared_ptr<spdlog::logger>& log) {
    Fleet fleet(plan, options, console, log);
    return fleet.run();
}

}  // namespace ptrun::launcher
