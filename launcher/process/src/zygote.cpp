#include "ptrun/launcher/process/zygote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "ptrun/launcher/process/worker_launcher.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {
namespace {

using nlohmann::json;

/// The longest message either side sends (a worker's environment, hex-encoded, is the largest).
constexpr std::size_t kMaxMessage = 1 << 20;
/// How long the zygote may take to answer the oldest fork request (counted from its sending, or
/// from the answer before it) before it counts as hung.
constexpr std::chrono::seconds kForkReply{10};
/// How long a zygote whose channel broke may take to exit before it is named as still running.
constexpr int kExitMs = 1'000;

std::string hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}

/// The message waiting, or nullopt when none is or at end of stream; `error` says which ("" for
/// none waiting). Never blocks: the loop calls it once the channel is readable.
std::optional<std::string> receive(int fd, std::string* error) {
    error->clear();
    std::string buf(kMaxMessage, '\0');
    ssize_t n;
    do n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    if (n < 0) {
        *error = std::string("its channel failed: ") + std::strerror(errno);
        return std::nullopt;
    }
    if (n == 0) {
        *error = "it closed its channel";
        return std::nullopt;
    }
    if (static_cast<std::size_t>(n) > buf.size()) {
        *error = "it sent a message over " + std::to_string(kMaxMessage) + " bytes";
        return std::nullopt;
    }
    buf.resize(static_cast<std::size_t>(n));
    return buf;
}

json fork_request(const SpawnRequest& r, const std::string& runner) {
    json argv = json::array();
    auto at = std::find(r.argv.begin(), r.argv.end(), runner);
    for (auto it = at == r.argv.end() ? at : at + 1; it != r.argv.end(); ++it)
        argv.push_back(hex(*it));
    json env = json::array();
    for (const auto& [k, v] : r.env) env.push_back(hex(k + "=" + v));
    std::string cwd(4096, '\0');
    if (::getcwd(cwd.data(), cwd.size()) == nullptr) cwd.clear();
    cwd.resize(std::strlen(cwd.c_str()));
    json binding = nullptr;
    if (r.binding) {
        binding = {{"cpu_mask", r.binding->cpu_mask},
                   {"node_mask", r.binding->node_mask},
                   {"node_bits", r.binding->node_bits},
                   {"many", r.binding->many_nodes}};
    }
    return {{"fork",
             {{"argv_hex", argv},
              {"env_hex", env},
              {"cwd_hex", hex(cwd)},
              {"parent", ::getpid()},
              {"allow_ptrace", r.allow_stack_capture},
              {"binding", binding}}}};
}

/// Sends `text` with the three descriptors attached.
bool send_with_fds(int sock, const std::string& text, const int (&fds)[3]) {
    iovec iov{const_cast<char*>(text.data()), text.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    ssize_t n;
    do n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(text.size());
}

}  // namespace

struct Zygote::State {
    enum class Phase { Loading, Ready, Done };

    /// A fork request sent and not answered yet.
    struct Pending {
        std::uint64_t ticket = 0;
        sys::Fd go;  ///< the worker's "go" pipe, ptrun's end
        int cgroup_procs_fd = -1;
        Forked forked;  ///< empty once cancelled
    };

    State(boost::asio::io_context& io, std::string runner_path, Handlers on)
        : channel(io), deadline(io), runner(std::move(runner_path)), handlers(std::move(on)) {}

    /// Reads the zygote's messages as they come while it loads, and while a fork request waits
    /// for its answer.
    static void watch(const std::shared_ptr<State>& self) {
        if (self->watching || self->phase == Phase::Done) return;
        if (self->phase == Phase::Ready && self->pending.empty()) return;
        self->watching = true;
        std::weak_ptr<State> weak = self;
        self->channel.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                                 [weak](boost::system::error_code ec) {
                                     auto s = weak.lock();
                                     if (!s) return;
                                     s->watching = false;
                                     if (ec || s->phase == Phase::Done) return;
                                     if (s->phase == Phase::Loading) {
                                         // Said, or going (its exit says how): the channel
                                         // is read again for a fork request's answer.
                                         if (s->read_first()) return;
                                     } else {
                                         s->read_answers();
                                     }
                                     watch(s);
                                 });
    }

    /// Reads and acts on the first message; false when none is waiting yet.
    bool read_first() {
        std::string error;
        auto message = receive(fd(), &error);
        if (!message) {
            if (error.empty()) return false;
            return true;  // it is going: its exit says how (exited())
        }
        json m = json::parse(*message, nullptr, false);
        if (m.is_object() && m.contains("ready") && m["ready"].is_object()) {
            phase = Phase::Ready;
            const auto& seconds = m["ready"].value("seconds", json(0.0));
            if (handlers.ready) handlers.ready(seconds.is_number() ? seconds.get<double>() : 0.0);
        } else if (m.is_object() && m.contains("failed") && m["failed"].is_object()) {
            const auto& f = m["failed"];
            ImportFailure failure;
            failure.module = text_of(f, "module");
            failure.error = text_of(f, "error");
            failure.traceback = text_of(f, "traceback");
            phase = Phase::Done;
            if (handlers.import_failed) handlers.import_failed(failure);
        } else {
            give_up(unsafe_or_garbled(m));
        }
        return true;
    }

    static std::string text_of(const json& object, const char* key) {
        auto it = object.find(key);
        return it != object.end() && it->is_string() ? it->get<std::string>() : "";
    }

    static std::string unsafe_or_garbled(const json& m) {
        if (m.is_object() && m.contains("unsafe") && m["unsafe"].is_string()) {
            return m["unsafe"].get<std::string>();
        }
        return "it said something ptrun does not understand";
    }

    /// The zygote forks nothing from now on: says why, once, and ends it; the requests it has
    /// not answered get -1, from a handler on the loop.
    void give_up(const std::string& why) {
        if (phase == Phase::Done) return;
        phase = Phase::Done;
        deadline.cancel();
        if (pid > 0 && !exited_already) ::kill(pid, SIGKILL);
        std::vector<Forked> unanswered;
        for (auto& p : pending) {
            if (p.forked) unanswered.push_back(std::move(p.forked));
        }
        pending.clear();  // closes the go pipes: a worker forked for them ends at once
        if (!unanswered.empty()) {
            boost::asio::post(channel.get_executor(),
                              [weak = self_weak, unanswered = std::move(unanswered)] {
                                  if (weak.expired()) return;  // the Zygote is gone
                                  for (const auto& forked : unanswered) forked(-1, 0);
                              });
        }
        if (handlers.unusable) handlers.unusable(why);
    }

    /// Reads every answer waiting and settles the requests in order.
    void read_answers() {
        while (phase == Phase::Ready && !pending.empty()) {
            std::string error;
            auto message = receive(fd(), &error);
            if (!message) {
                if (!error.empty()) {
                    channel_failed("the zygote (pid " + std::to_string(pid) + ") " + error +
                                   " while forking a worker");
                }
                return;
            }
            answer(*message);
        }
        if (phase == Phase::Ready && pending.empty()) {
            // Anything said now was not asked for.
            std::string error;
            if (auto extra = receive(fd(), &error))
                give_up(unsafe_or_garbled(json::parse(*extra, nullptr, false)));
        }
    }

    /// Settles the oldest request with the zygote's answer `message`.
    void answer(const std::string& message) {
        json m = json::parse(message, nullptr, false);
        if (!m.is_object() || !m.contains("forked") || !m["forked"].is_number_integer()) {
            if (m.is_object() && m.contains("error") && m["error"].is_string()) {
                give_up("it could not fork a worker: " + m["error"].get<std::string>());
            } else {
                give_up(unsafe_or_garbled(m));
            }
            return;
        }
        const auto worker = static_cast<pid_t>(m["forked"].get<long long>());
        if (worker <= 1) {
            give_up("it answered a fork request with pid " + std::to_string(worker));
            return;
        }
        Pending p = std::move(pending.front());
        pending.pop_front();
        arm_deadline();
        ::setpgid(worker, worker);  // the worker does it too: the group exists before a signal
        if (!p.forked) {
            ::kill(worker, SIGKILL);  // cancelled: it never runs (nor would it: no "go")
            return;
        }
        int cgroup_errno = 0;
        if (p.cgroup_procs_fd >= 0) {
            const std::string text = std::to_string(worker);
            if (::write(p.cgroup_procs_fd, text.data(), text.size()) < 0) cgroup_errno = errno;
        }
        auto forked = std::move(p.forked);
        forked(worker, cgroup_errno);
        if (::write(p.go.get(), "g", 1) != 1) {
            ::kill(worker,
                   SIGKILL);  // cannot happen while it waits on the pipe; never left waiting
        }
    }

    /// The oldest request's answer is due kForkReply from now (none waits: nothing is due).
    void arm_deadline() {
        if (pending.empty()) {
            deadline.cancel();
            return;
        }
        deadline.expires_after(kForkReply);
        deadline.async_wait([weak = self_weak](boost::system::error_code ec) {
            auto s = weak.lock();
            if (!s || ec || s->phase != Phase::Ready) return;
            s->channel_failed("the zygote (pid " + std::to_string(s->pid) +
                              ") did not answer within " + std::to_string(kForkReply.count()) +
                              " s while forking a worker");
        });
    }

    /// Its process ended (ProcessLauncher reaped it).
    void exited(const WorkerExit& how) {
        exited_already = true;
        if (phase == Phase::Loading) read_first();  // it may have said why before it went
        if (phase == Phase::Done) return;
        give_up("the zygote (pid " + std::to_string(pid) + ") " +
                (phase == Phase::Loading ? "ended before it was ready: " : "died: ") +
                describe(how));
    }

    /// How the zygote ended if it has (read without reaping it: ProcessLauncher reaps it), for a
    /// channel that broke before its exit was reaped; nullopt while it runs.
    std::optional<WorkerExit> ended() const {
        // Its channel closes as it exits, a moment before it can be waited for: wait that moment
        // (at most kExitMs) on a pidfd, which becomes readable once it has exited.
        if (pid > 0) {
            const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
            if (pidfd >= 0) {
                pollfd p{pidfd, POLLIN, 0};
                ::poll(&p, 1, kExitMs);
                ::close(pidfd);
            }
        }
        siginfo_t info{};
        if (pid <= 0 ||
            ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            info.si_pid != pid) {
            return std::nullopt;
        }
        if (info.si_code == CLD_EXITED) return WorkerExit{info.si_status, 0};
        return WorkerExit{0, info.si_status};
    }

    /// Gives up after the channel failed with `error`: says the zygote died when it has.
    void channel_failed(const std::string& error) {
        if (auto how = ended()) {
            give_up("the zygote (pid " + std::to_string(pid) + ") died: " + describe(*how));
        } else {
            give_up(error);
        }
    }

    int fd() { return channel.native_handle(); }

    boost::asio::posix::stream_descriptor channel;
    boost::asio::steady_timer deadline;  ///< the oldest request's answer is due
    std::string runner;
    Handlers handlers;
    std::weak_ptr<State> self_weak;  ///< for handlers: none runs once the Zygote is gone
    pid_t pid = -1;
    Phase phase = Phase::Loading;
    bool exited_already = false;
    bool watching = false;        ///< an async_wait on the channel is outstanding
    std::deque<Pending> pending;  ///< requests sent, oldest first (the zygote answers in order)
    std::uint64_t next_ticket = 1;
};

Zygote::Zygote(boost::asio::io_context& io, WorkerLauncher& launcher, SpawnRequest request,
               std::string runner, Handlers handlers)
    : state_(std::make_shared<State>(io, std::move(runner), std::move(handlers))) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        throw SpawnError(std::string("cannot make the zygote's channel: ") + std::strerror(errno));
    }
    sys::Fd theirs(pair[1]);
    state_->channel.assign(pair[0]);
    const int buffer = static_cast<int>(kMaxMessage);
    ::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    ::setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    request.control_fd = theirs.get();
    std::weak_ptr<State> weak = state_;
    state_->pid = launcher.launch_helper(request, [weak](const WorkerExit& how) {
        if (auto s = weak.lock()) s->exited(how);
    });
    state_->self_weak = state_;
    State::watch(state_);
}

Zygote::~Zygote() {
    boost::system::error_code ignored;
    state_->deadline.cancel();
    state_->channel.close(ignored);
}

pid_t Zygote::pid() const { return state_->pid; }

bool Zygote::ready() const { return state_->phase == State::Phase::Ready; }

std::uint64_t Zygote::fork_worker(const SpawnRequest& request, Forked forked) {
    auto& s = *state_;
    if (s.phase != State::Phase::Ready) return 0;
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return 0;  // the caller's own start says what is short
    sys::Fd go_read(go[0]), go_write(go[1]);
    const int out = request.stdout_fd >= 0 ? request.stdout_fd : STDOUT_FILENO;
    const int err = request.stderr_fd >= 0 ? request.stderr_fd : STDERR_FILENO;
    const int fds[3] = {out, err, go_read.get()};
    if (!send_with_fds(s.fd(), fork_request(request, s.runner).dump(), fds)) {
        s.channel_failed(std::string("cannot send it a fork request: ") + std::strerror(errno));
        return 0;
    }
    State::Pending p;
    p.ticket = s.next_ticket++;
    p.go = std::move(go_write);
    p.cgroup_procs_fd = request.cgroup_procs_fd;
    p.forked = std::move(forked);
    s.pending.push_back(std::move(p));
    if (s.pending.size() == 1) s.arm_deadline();
    State::watch(state_);
    return s.pending.back().ticket;
}

void Zygote::cancel(std::uint64_t ticket) {
    for (auto& p : state_->pending) {
        if (p.ticket == ticket) p.forked = nullptr;
    }
}

}  // namespace ptrun::launcher
