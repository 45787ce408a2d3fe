#include "agent_processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "event_loop.hpp"
#include "sim_agents.hpp"
#include "store_host.hpp"

namespace ptrun::bench {

ProcessUsage ProcessUsage::now() {
    ProcessUsage u;
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) u.rss_kb = std::stoul(line.substr(6));
        if (line.rfind("VmHWM:", 0) == 0) u.hwm_kb = std::stoul(line.substr(6));
    }
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr) ++u.fds;
        ::closedir(d);
        u.fds -= 3;  // ".", ".." and the directory's own descriptor
    }
    return u;
}

namespace {

using std::chrono::milliseconds;

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::int64_t ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double ms(std::int64_t a, std::int64_t b) { return static_cast<double>(b - a) / 1e6; }

void require(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
}

/// One end of a parent/child pipe pair: lines out, lines in (blocking, or while a loop runs).
class Link {
  public:
    Link(int in, int out) : in_(in), out_(out) {
        if (::fcntl(in_, F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
    }
    int in() const { return in_; }

    void say(const std::string& line) {
        const std::string text = line + "\n";
        std::size_t off = 0;
        while (off < text.size()) {
            ssize_t n = ::write(out_, text.data() + off, text.size() - off);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("write to pipe");
            off += static_cast<std::size_t>(n);
        }
    }
    /// The next line, blocking until `deadline`; nullopt at a timeout.
    std::optional<std::string> hear(Clock::time_point deadline) {
        for (;;) {
            if (auto l = take()) return l;
            const auto left = std::min<milliseconds>(
                std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                std::chrono::hours(1));
            if (left.count() <= 0) return std::nullopt;
            pollfd p{in_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count()) + 1) < 0 && errno != EINTR)
                fail("poll");
            read_some();
        }
    }
    /// The next line, running `loop` (beats go on) until it arrives or `deadline`.
    std::string hear(EventLoop& loop, Clock::time_point deadline) {
        std::optional<std::string> got = take();
        if (!got) {
            loop.watch_fd(in_, [this, &got] {
                read_some();
                if (!got) got = take();
            });
            loop.run_until([&] { return got.has_value(); }, deadline);
            loop.watch_fd(in_, {});
        }
        require(got.has_value(), "no word from the parent in time");
        return *got;
    }

  private:
    std::optional<std::string> take() {
        const auto nl = buf_.find('\n');
        if (nl == std::string::npos) return std::nullopt;
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
    }
    void read_some() {
        char b[4096];
        for (;;) {
            ssize_t n = ::read(in_, b, sizeof b);
            if (n > 0) {
                buf_.append(b, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) throw std::runtime_error("the other end of the pipe closed");
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return;
            fail("read from pipe");
        }
    }

    int in_, out_;
    std::string buf_;
};

/// Words of `line` after its first (the verb).
std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// ---- the agent process: one slice [first, first + count) of the N agents ----

struct Slice {
    int first = 0;
    int count = 0;
};

SimOptions sim_options(const LoadArgs& a, Slice s) {
    SimOptions o;
    o.first = s.first;
    o.count = s.count;
    o.max_restarts = 3;
    o.conns = a.conns;
    o.beats = true;  // RdzvSession beats from its construction on, the whole job long
    o.clock_samples = a.clock_samples;
    o.join_progress = a.join_progress;
    return o;
}

void child_floor(Link& link, const LoadArgs& a, Slice s, std::uint16_t port) {
    const auto deadline = Clock::now() + a.timeout;
    EventLoop loop;
    auto conns = loop.connect(port, s.count, 256);
    link.say("ready");
    require(link.hear(loop, deadline) == "go", "floor: expected go");
    const std::string counter = "/bench/floor/count", done_key = "/bench/floor/done";
    int finished = 0;
    const auto t0 = Clock::now();
    for (auto* c : conns) {
        c->send(bench::add(counter, 1), Reply::I64, [&, c](std::string_view v) {
            std::int64_t n = 0;
            std::memcpy(&n, v.data(), 8);
            if (n == a.nodes) c->send(bench::set(done_key, "1"), Reply::None, {});
            c->send(bench::wait({done_key}), Reply::Wait, [&](std::string_view) { ++finished; });
        });
    }
    require(loop.run_until([&] { return finished == s.count; }, deadline), "floor timed out");
    link.say("done " + std::to_string(ns(t0)) + " " + std::to_string(ns(Clock::now())));
    require(link.hear(loop, deadline) == "stop", "floor: expected stop");
}

void child_close(Link& link, const LoadArgs& a, Slice s, std::uint16_t port) {
    const auto deadline = Clock::now() + a.timeout;
    EventLoop loop;
    SimAgents agents(loop, port, launcher::rdzv_keys("bench-close"), sim_options(a, s));
    link.say("ready");
    require(link.hear(loop, deadline) == "go", "close: expected go");
    agents.start_beats(a.heartbeat);
    int assigned = 0, pushed = 0;
    std::size_t bytes = 0;
    Clock::time_point last_push, first_assigned;
    const auto t0 = Clock::now();
    for (int i = 0; i < s.count; ++i) {
        agents.join(
            i,
            [&](int, int round, std::size_t n) {
                require(round == 0, "close: expected round 0");
                if (assigned++ == 0) first_assigned = Clock::now();
                bytes = n;
            },
            [&](int) {
                if (++pushed == s.count) last_push = Clock::now();
            });
    }
    require(loop.run_until([&] { return assigned == s.count; }, deadline), "close timed out");
    const auto t1 = Clock::now();
    link.say("done " + std::to_string(ns(t0)) + " " + std::to_string(ns(first_assigned)) + " " +
             std::to_string(ns(last_push)) + " " + std::to_string(ns(t1)) + " " +
             std::to_string(bytes) + " " + std::to_string(agents.progress_reports()));
    require(link.hear(loop, deadline) == "stop", "close: expected stop");
}

void child_rejoin(Link& link, const LoadArgs& a, Slice s, std::uint16_t port) {
    const auto deadline = Clock::now() + a.timeout;
    EventLoop loop;
    SimAgents agents(loop, port, launcher::rdzv_keys("bench-rejoin"), sim_options(a, s));
    link.say("ready");
    require(link.hear(loop, deadline) == "go", "rejoin: expected go");
    agents.start_beats(a.heartbeat);
    int assigned = 0;
    for (int i = 0; i < s.count; ++i) agents.join(i, [&](int, int, std::size_t) { ++assigned; });
    require(loop.run_until([&] { return assigned == s.count; }, deadline),
            "rejoin: the first round timed out");
    link.say("assigned");
    require(link.hear(loop, deadline) == "watch", "rejoin: expected watch");

    const int victim = a.nodes - 1 - s.first;  // local index; in this slice when < count
    const int survivors = victim < s.count ? s.count - 1 : s.count;
    std::optional<Clock::time_point> detected;
    int rejoined = 0, next_round = -1, pushed = 0;
    Clock::time_point last_push, first_rejoined;
    std::string reason = "-";
    for (int i = 0; i < survivors; ++i) {  // the victim is the slice's last agent
        agents.watch(
            i, 0,
            [&](int agent, const launcher::RoundEnd& end) {
                reason = launcher::to_text(end.reason) + ": " + end.message;
                agents.join(
                    agent,
                    [&](int, int round, std::size_t) {
                        next_round = round;
                        if (rejoined++ == 0) first_rejoined = Clock::now();
                    },
                    [&](int) {
                        if (++pushed == survivors) last_push = Clock::now();
                    });
            },
            [&](int) {
                if (!detected) detected = Clock::now();
            });
    }
    link.say("watching");
    require(link.hear(loop, deadline) == "silence", "rejoin: expected silence");
    const bool early = detected.has_value();
    std::int64_t silenced = 0;
    if (victim < s.count) silenced = ns(agents.silence(victim));
    require(loop.run_until([&] { return rejoined == survivors; }, deadline),
            "rejoin: the next round timed out");
    const auto t1 = Clock::now();
    link.say("done " + std::to_string(ns(*detected)) + " " + std::to_string(ns(first_rejoined)) +
             " " + std::to_string(ns(last_push)) + " " + std::to_string(ns(t1)) + " " +
             std::to_string(next_round) + " " + (early ? "1" : "0") + " " +
             std::to_string(silenced) + " " + std::to_string(agents.progress_reports()) + " " +
             reason);
    require(link.hear(loop, deadline) == "stop", "rejoin: expected stop");
}

[[noreturn]] void agent_process(Link link, const LoadArgs& a, Slice s) {
    int rc = 0;
    try {
        for (;;) {
            auto line = link.hear(Clock::time_point::max());
            auto w = words(*line);
            if (w.empty() || w[0] == "exit") break;
            const auto port = static_cast<std::uint16_t>(std::stoi(w.at(1)));
            if (w[0] == "floor")
                child_floor(link, a, s, port);
            else if (w[0] == "close")
                child_close(link, a, s, port);
            else if (w[0] == "rejoin")
                child_rejoin(link, a, s, port);
            else
                throw std::runtime_error("unknown command " + w[0]);
        }
    } catch (const std::exception& e) {
        try {
            link.say(std::string("error agents ") + std::to_string(s.first) + "+" +
                     std::to_string(s.count) + ": " + e.what());
        } catch (...) {
        }
        rc = 1;
    }
    std::fflush(nullptr);
    ::_exit(rc);
}

// ---- the store host's side ----

/// CPU time (user + system) of each thread of this process, in ms, by thread id.
std::map<int, double> thread_cpu_ms() {
    std::map<int, double> out;
    const double tick_ms = 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    DIR* d = ::opendir("/proc/self/task");
    if (d == nullptr) return out;
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/stat");
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const auto paren = text.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream rest(text.substr(paren + 2));  // from field 3 (state) on
        std::vector<std::string> w;
        for (std::string x; rest >> x && w.size() < 13;) w.push_back(x);
        if (w.size() < 13) continue;
        out[std::stoi(e->d_name)] = static_cast<double>(std::stoull(w[11]) + std::stoull(w[12])) *
                                    tick_ms;  // utime, stime: fields 14 and 15
    }
    ::closedir(d);
    return out;
}

std::set<int> thread_ids() {
    std::set<int> ids;
    for (const auto& [id, ms] : thread_cpu_ms()) ids.insert(id);
    return ids;
}

/// The CPU the store host's threads spent in a phase: the server's, and the others' (the
/// Coordinator's thread and its store client; the main thread only waits on pipes).
struct HostThreads {
    std::set<int> server;  ///< threads started with the StoreHost (the server's)
    std::map<int, double> at_start;

    void start() { at_start = thread_cpu_ms(); }
    std::string json() const {
        double server_ms = 0, other_ms = 0;
        for (const auto& [id, now] : thread_cpu_ms()) {
            if (id == ::getpid()) continue;
            auto a = at_start.find(id);
            const double spent = now - (a == at_start.end() ? 0.0 : a->second);
            (server.count(id) ? server_ms : other_ms) += spent;
        }
        char out[128];
        std::snprintf(out, sizeof out, "\"server_cpu_ms\": %.0f, \"coordinator_cpu_ms\": %.0f",
                      server_ms, other_ms);
        return out;
    }
};

class AgentProcesses {
  public:
    explicit AgentProcesses(const LoadArgs& a) {
        const int k = a.agent_processes;
        for (int p = 0; p < k; ++p) {
            Slice s{a.nodes * p / k, a.nodes * (p + 1) / k - a.nodes * p / k};
            int down[2], up[2];
            if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0) fail("pipe2");
            const pid_t pid = ::fork();
            if (pid < 0) fail("fork");
            if (pid == 0) {
                ::close(down[1]);
                ::close(up[0]);
                for (auto& c : children_) {  // the siblings' pipes are not this child's
                    ::close(c.link.in());
                    ::close(c.out);
                }
                agent_process(Link(down[0], up[1]), a, s);
            }
            ::close(down[0]);
            ::close(up[1]);
            children_.push_back(Child{pid, s, Link(up[0], down[1]), down[1]});
        }
    }
    ~AgentProcesses() {
        for (auto& c : children_) {
            try {
                c.link.say("exit");
            } catch (...) {
            }
            ::close(c.out);
            ::close(c.link.in());
            int status = 0;
            ::waitpid(c.pid, &status, 0);
        }
    }
    AgentProcesses(const AgentProcesses&) = delete;
    AgentProcesses& operator=(const AgentProcesses&) = delete;

    void tell(const std::string& line) {
        for (auto& c : children_) c.link.say(line);
    }
    /// One line from every process, each starting with `verb`; the words after it.
    std::vector<std::vector<std::string>> hear(const std::string& verb,
                                               Clock::time_point deadline) {
        std::vector<std::vector<std::string>> out;
        for (auto& c : children_) {
            auto line = c.link.hear(deadline);
            require(line.has_value(), "agent process timed out waiting for '" + verb + "'");
            require(line->rfind("error", 0) != 0, *line);
            auto w = words(*line);
            require(!w.empty() && w[0] == verb, "expected '" + verb + "', got '" + *line + "'");
            w.erase(w.begin());
            out.push_back(std::move(w));
            if (verb == "done" && line->find(' ') != std::string::npos) {
                out.back().push_back(*line);  // the whole line, for free text at its end
            }
        }
        return out;
    }

  private:
    struct Child {
        pid_t pid;
        Slice slice;
        Link link;
        int out;
    };
    std::vector<Child> children_;
};

/// Waits until the server holds no client connection (the last phase's are closed).
void wait_idle(StoreHost& host) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (host.server.stats().connections > 0) {
        require(Clock::now() < deadline, "the server still holds the last phase's connections");
        std::this_thread::sleep_for(milliseconds(20));
    }
}

std::int64_t ll(const std::string& s) { return std::stoll(s); }

std::string usage_json(const ProcessUsage& u, std::size_t stored_before, StoreHost& host) {
    const auto st = host.server.stats();
    char out[256];
    std::snprintf(out, sizeof out,
                  "\"host_rss_kb\": %zu, \"host_fds\": %zu, \"server_connections\": %zu, "
                  "\"stored_bytes\": %zu",
                  u.rss_kb, u.fds, st.connections, st.stored_bytes - stored_before);
    return out;
}

std::string floor_phase(StoreHost& host, AgentProcesses& procs, const LoadArgs& a) {
    const auto deadline = Clock::now() + a.timeout;
    procs.tell("floor " + std::to_string(host.server.port()));
    procs.hear("ready", deadline);
    procs.tell("go");
    std::int64_t t0 = INT64_MAX, t1 = 0;
    for (const auto& w : procs.hear("done", deadline)) {
        t0 = std::min(t0, ll(w.at(0)));
        t1 = std::max(t1, ll(w.at(1)));
    }
    procs.tell("stop");
    char out[96];
    std::snprintf(out, sizeof out, "{\"barrier_ms\": %.2f}", ms(t0, t1));
    return out;
}

std::string close_phase(StoreHost& host, HostThreads& threads, AgentProcesses& procs,
                        const LoadArgs& a) {
    const auto deadline = Clock::now() + a.timeout;
    const auto keys = launcher::rdzv_keys("bench-close");
    launcher::CoordinatorPolicy p;
    p.min_nodes = p.max_nodes = a.nodes;
    p.max_restarts = 3;
    p.lost_after = a.heartbeat * 3;
    const std::size_t stored_before = host.server.stats().stored_bytes;
    auto coordinator = host.coordinator(keys, p, a.heartbeat);
    procs.tell("close " + std::to_string(host.server.port()));
    procs.hear("ready", deadline);
    threads.start();
    procs.tell("go");
    std::int64_t t0 = INT64_MAX, first = INT64_MAX, pushed = 0, t1 = 0, bytes = 0, reports = 0;
    for (const auto& w : procs.hear("done", deadline)) {
        t0 = std::min(t0, ll(w.at(0)));
        first = std::min(first, ll(w.at(1)));
        pushed = std::max(pushed, ll(w.at(2)));
        t1 = std::max(t1, ll(w.at(3)));
        bytes = std::max(bytes, ll(w.at(4)));
        reports += ll(w.at(5));
    }
    const std::string usage =
        usage_json(ProcessUsage::now(), stored_before, host) + ", " + threads.json();
    procs.tell("stop");
    coordinator.reset();
    char out[512];
    std::snprintf(out, sizeof out,
                  "{\"total_ms\": %.2f, \"joins_sent_ms\": %.2f, \"first_assigned_ms\": %.2f, "
                  "\"admission_bytes\": %lld, \"progress_reports\": %lld, %s}",
                  ms(t0, t1), ms(t0, pushed), ms(t0, first), static_cast<long long>(bytes),
                  static_cast<long long>(reports), usage.c_str());
    return out;
}

std::string rejoin_phase(StoreHost& host, HostThreads& threads, AgentProcesses& procs,
                         const LoadArgs& a) {
    const auto deadline = Clock::now() + a.timeout;
    const auto keys = launcher::rdzv_keys("bench-rejoin");
    launcher::CoordinatorPolicy p;
    p.min_nodes = a.nodes - 1;
    p.max_nodes = a.nodes;
    p.max_restarts = 3;
    p.last_call = a.last_call;
    p.lost_after = a.heartbeat * 3;
    const std::size_t stored_before = host.server.stats().stored_bytes;
    auto coordinator = host.coordinator(keys, p, a.heartbeat);
    procs.tell("rejoin " + std::to_string(host.server.port()));
    procs.hear("ready", deadline);
    procs.tell("go");
    procs.hear("assigned", deadline);
    procs.tell("watch");
    procs.hear("watching", deadline);
    std::this_thread::sleep_for(a.heartbeat * 3);  // steady beating
    const std::string usage = usage_json(ProcessUsage::now(), stored_before, host);
    threads.start();
    procs.tell("silence");
    std::int64_t detected = INT64_MAX, first = INT64_MAX, pushed = 0, t1 = 0, silenced = 0;
    std::int64_t reports = 0;
    int next_round = -1;
    std::string reason;
    for (const auto& w : procs.hear("done", deadline)) {
        detected = std::min(detected, ll(w.at(0)));
        first = std::min(first, ll(w.at(1)));
        pushed = std::max(pushed, ll(w.at(2)));
        t1 = std::max(t1, ll(w.at(3)));
        next_round = std::stoi(w.at(4));
        require(w.at(5) == "0", "rejoin: the round ended before a node was silenced");
        silenced = std::max(silenced, ll(w.at(6)));
        reports += ll(w.at(7));
        // The free text after the 9th word of the whole line (the last element).
        const std::string& line = w.back();
        std::size_t at = 0;
        for (int n = 0; n < 9 && at != std::string::npos; ++n) at = line.find(' ', at + 1);
        if (at != std::string::npos) reason = line.substr(at + 1);
    }
    const std::string cpu = threads.json();  // while the coordinator's thread is there
    procs.tell("stop");
    coordinator.reset();
    require(reason.rfind("node-lost", 0) == 0,
            "rejoin: the round ended with '" + reason + "', not node-lost");
    require(next_round == 1, "rejoin: expected round 1");
    char out[768];
    std::snprintf(
        out, sizeof out,
        "{\"rejoin_ms\": %.2f, \"joins_sent_ms\": %.2f, \"first_assigned_ms\": %.2f, "
        "\"detect_after_ms\": %.2f, \"last_call_ms\": %ld, \"progress_reports\": %lld, %s}",
        ms(detected, t1), ms(detected, pushed), ms(detected, first), ms(silenced, detected),
        static_cast<long>(a.last_call.count()), static_cast<long long>(reports),
        (usage + ", " + cpu).c_str());
    return out;
}

}  // namespace

std::string run_agent_processes(const LoadArgs& a) {
    AgentProcesses procs(a);
    const auto base = ProcessUsage::now();
    HostThreads threads;
    StoreHost host;
    for (int t : thread_ids()) {
        if (t != ::getpid()) threads.server.insert(t);
    }
    const std::string floor = floor_phase(host, procs, a);
    std::fprintf(stderr, "floor: %s\n", floor.c_str());
    wait_idle(host);
    const std::string close = close_phase(host, threads, procs, a);
    std::fprintf(stderr, "close: %s\n", close.c_str());
    wait_idle(host);
    const std::string rejoin = rejoin_phase(host, threads, procs, a);
    wait_idle(host);
    const auto end = ProcessUsage::now();
    const auto stored = host.server.stats().stored_bytes;
    char out[4096];
    std::snprintf(
        out, sizeof out,
        "{\"nodes\": %d, \"agent_processes\": %d, \"conns_per_agent\": %d, \"clock_samples\": %d, "
        "\"join_progress\": %s, \"heartbeat_ms\": %ld, \"floor\": %s, \"close\": %s, \"rejoin\": "
        "%s, \"host\": "
        "{\"rss_base_kb\": %zu, \"vmhwm_kb\": %zu, \"rss_end_kb\": %zu, \"stored_bytes_end\": "
        "%zu}}",
        a.nodes, a.agent_processes, a.conns, a.clock_samples, a.join_progress ? "true" : "false",
        static_cast<long>(a.heartbeat.count()), floor.c_str(), close.c_str(), rejoin.c_str(),
        base.rss_kb, end.hwm_kb, end.rss_kb, stored);
    return out;
}

}  // namespace ptrun::bench
