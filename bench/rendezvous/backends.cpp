// bench/rendezvous: one round of ptrun's multi-node rendezvous through each backend, c10d and
// etcd, with N agents simulated in one process by the real classes: N RdzvSession objects
// (distinct node ids and host names, nproc 1), and
//   c10d: the store host's TcpStoreServer and Coordinator, built as start_multi_node builds them;
//   etcd: an EtcdLeadership per agent (the winner runs the Coordinator on a fenced EtcdStore) and
//         sessions whose connector opens EtcdStores, as start_etcd_multi_node builds them, and
//         each agent's RoundStore (the workers' store it hosts, renewed before each join).
//   bench_rdzv_backends --nodes N [--etcd HOST:PORT[,HOST:PORT...]]... [--no-c10d]
//                       [--heartbeat-ms 500] [--last-call-ms 100] [--timeout-s 120] [--silent]
// Each --etcd is one cluster (its members); every backend runs, in this order:
//   floor:  N store clients (TcpStoreClient / EtcdStore, a thread each) ADD 1 to a counter, the
//           N-th SETs "done", all WAIT for it: the store's own cost of an N-client barrier
//   close:  min = max = N: every agent's join() started -> every join callback holding its
//           NodePlacement
//   rejoin: min N-1, max N; one agent leaves (report_leaving, then stop; --silent: stop without a
//           word, found by its heartbeats); every survivor joins again from the watch's ended
//           callback, as the agent does: the first survivor seeing the round end -> every
//           survivor holding round 1's placement
// With an etcd cluster, the requests etcd served and the WAL fsyncs it made in each run come from
// its /metrics (the first member's; every request of the run goes through it).
// Prints one JSON object. Exits 1 on an error or a timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/etcd/client.hpp"
#include "ptrun/etcd/etcd_store.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/etcd_leadership.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "round_store.hpp"  // launcher/agent/src: the etcd agent's workers' store

namespace {

using namespace ptrun;
using namespace ptrun::launcher;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Args {
    int nodes = 8;
    milliseconds heartbeat{500};
    milliseconds last_call{100};
    std::chrono::seconds timeout{120};
    bool silent = false;
    bool c10d = true;
    std::vector<std::vector<etcd::Endpoint>> etcd;  ///< one entry per cluster: its members
};

std::vector<etcd::Endpoint> parse_endpoints(const std::string& text) {
    std::vector<etcd::Endpoint> out;
    std::stringstream in(text);
    for (std::string one; std::getline(in, one, ',');) {
        const auto colon = one.rfind(':');
        if (colon == std::string::npos) throw std::runtime_error("--etcd: no port in " + one);
        out.push_back(etcd::Endpoint{one.substr(0, colon),
                                     static_cast<std::uint16_t>(std::stoi(one.substr(colon + 1)))});
    }
    if (out.empty()) throw std::runtime_error("--etcd: no member");
    return out;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string f = argv[i];
        if (f == "--silent") {
            a.silent = true;
            continue;
        }
        if (f == "--no-c10d") {
            a.c10d = false;
            continue;
        }
        if (i + 1 >= argc) throw std::runtime_error(f + " needs a value");
        const std::string v = argv[++i];
        if (f == "--nodes")
            a.nodes = std::stoi(v);
        else if (f == "--heartbeat-ms")
            a.heartbeat = milliseconds(std::stoi(v));
        else if (f == "--last-call-ms")
            a.last_call = milliseconds(std::stoi(v));
        else if (f == "--timeout-s")
            a.timeout = std::chrono::seconds(std::stoi(v));
        else if (f == "--etcd")
            a.etcd.push_back(parse_endpoints(v));
        else
            throw std::runtime_error("unknown flag " + f);
    }
    if (a.nodes < 2) throw std::runtime_error("--nodes must be at least 2");
    return a;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void require(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
}

std::string fixed(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", v);
    return text;
}

/// N agents hold ~3N store connections and servers: the soft descriptor limit up to the hard one.
void raise_fd_limit() {
    rlimit l{};
    if (::getrlimit(RLIMIT_NOFILE, &l) != 0) return;
    l.rlim_cur = l.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &l);
}

std::shared_ptr<spdlog::logger> quiet_logger() {
    static auto logger = [] {
        auto l = std::make_shared<spdlog::logger>(
            "bench", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        l->set_level(spdlog::level::warn);
        return l;
    }();
    return logger;
}

/// Callbacks from the sessions' threads: how many arrived, the first and the last time.
class Tally {
  public:
    void hit() {
        std::lock_guard lock(mu_);
        const auto now = Clock::now();
        if (count_++ == 0) first_ = now;
        last_ = now;
        cv_.notify_all();
    }
    void fail(const std::string& why) {
        std::lock_guard lock(mu_);
        if (error_.empty()) error_ = why;
        cv_.notify_all();
    }
    /// Until `n` hits; throws on a failure or at `deadline` (naming `what`).
    void wait(int n, Clock::time_point deadline, const std::string& what) {
        std::unique_lock lock(mu_);
        cv_.wait_until(lock, deadline, [&] { return count_ >= n || !error_.empty(); });
        require(error_.empty(), what + ": " + error_);
        require(count_ >= n,
                what + " timed out (" + std::to_string(count_) + " of " + std::to_string(n) + ")");
    }
    int count() {
        std::lock_guard lock(mu_);
        return count_;
    }
    Clock::time_point first() {
        std::lock_guard lock(mu_);
        return first_;
    }
    Clock::time_point last() {
        std::lock_guard lock(mu_);
        return last_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    int count_ = 0;
    Clock::time_point first_, last_;
    std::string error_;
};

// ---- etcd's own counters ----------------------------------------------------------------------

/// GET /metrics of one etcd member (plain HTTP/1.0, read to EOF): the sums of the samples whose
/// name (and labels) start with each of `names`.
std::map<std::string, double> etcd_metrics(const etcd::Endpoint& member,
                                           const std::vector<std::string>& names) {
    std::map<std::string, double> out;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return out;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(member.port);
    if (::inet_pton(AF_INET, member.host.c_str(), &a.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return out;
    }
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: " + member.host + "\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        ::close(fd);
        return out;
    }
    std::string body;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        body.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#') continue;
        for (const auto& name : names) {
            if (line.rfind(name, 0) != 0) continue;
            const auto space = line.rfind(' ');
            if (space != std::string::npos)
                out[name] += std::strtod(line.c_str() + space + 1, nullptr);
        }
    }
    return out;
}

/// What etcd did between two calls of take(): requests by kind and WAL fsyncs.
class EtcdCounters {
  public:
    explicit EtcdCounters(std::optional<etcd::Endpoint> member) : member_(std::move(member)) {
        if (member_) before_ = etcd_metrics(*member_, names());
    }
    /// The differences since construction or the last take(), as JSON fields ("" without etcd).
    std::string take() {
        if (!member_) return "";
        auto now = etcd_metrics(*member_, names());
        auto d = [&](const std::string& name) {
            return static_cast<long>(now[name] - before_[name] + 0.5);
        };
        std::string out = ", \"etcd\": {\"range\": " + std::to_string(d(kRange)) +
                          ", \"txn\": " + std::to_string(d(kTxn)) +
                          ", \"put\": " + std::to_string(d(kPut)) +
                          ", \"lease\": " + std::to_string(d(kLeaseGrant) + d(kLeaseKeep)) +
                          ", \"watches\": " + std::to_string(d(kWatch)) +
                          ", \"fsyncs\": " + std::to_string(d(kFsync)) + "}";
        before_ = std::move(now);
        return out;
    }

  private:
    static constexpr const char* kRange = "grpc_server_started_total{grpc_method=\"Range\"";
    static constexpr const char* kTxn = "grpc_server_started_total{grpc_method=\"Txn\"";
    static constexpr const char* kPut = "grpc_server_started_total{grpc_method=\"Put\"";
    static constexpr const char* kLeaseGrant =
        "grpc_server_started_total{grpc_method=\"LeaseGrant\"";
    static constexpr const char* kLeaseKeep =
        "grpc_server_started_total{grpc_method=\"LeaseKeepAlive\"";
    static constexpr const char* kWatch = "grpc_server_started_total{grpc_method=\"Watch\"";
    static constexpr const char* kFsync = "etcd_disk_wal_fsync_duration_seconds_count";
    static std::vector<std::string> names() {
        return {kRange, kTxn, kPut, kLeaseGrant, kLeaseKeep, kWatch, kFsync};
    }
    std::optional<etcd::Endpoint> member_;
    std::map<std::string, double> before_;
};

// ---- the backends -----------------------------------------------------------------------------

/// One backend: c10d (no members) or one etcd cluster.
struct Backend {
    std::string label;
    std::vector<etcd::Endpoint> members;
    bool is_etcd() const { return !members.empty(); }
    etcd::ClientOptions client(milliseconds read_timeout, milliseconds heartbeat) const {
        etcd::ClientOptions o;
        o.endpoints = members;
        o.io_timeout = std::min(read_timeout, milliseconds(5'000));  // etcd_multi_node's
        o.retry_for = std::max<milliseconds>(heartbeat * 3, milliseconds(5'000));
        return o;
    }
    std::optional<etcd::Endpoint> first_member() const {
        return is_etcd() ? std::optional(members.front()) : std::nullopt;
    }
};

/// A unique run id per run (etcd keeps the keys of earlier processes until they are removed).
std::string run_id(const std::string& what) {
    static int n = 0;
    return "bench-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

RdzvSettings settings(const Args& a) {
    RdzvSettings s;
    s.join_timeout = a.timeout;
    s.last_call_timeout = a.last_call;
    s.read_timeout = milliseconds(10'000);
    s.heartbeat = a.heartbeat;
    s.keep_alive_max_attempt = 3;
    return s;
}

/// One rendezvous job: its coordinator side and its N agents.
struct Job {
    const Backend& backend;
    RdzvKeys keys;
    std::vector<NodeInfo> nodes;
    // c10d
    std::unique_ptr<rdzv::TcpStoreServer> server;
    std::unique_ptr<Coordinator> coordinator;
    // etcd
    std::vector<std::unique_ptr<EtcdLeadership>> leaderships;
    std::vector<std::unique_ptr<RoundStore>> round_stores;
    // both
    std::vector<std::unique_ptr<RdzvSession>> sessions;

    Job(const Backend& b, const std::string& run, CoordinatorPolicy policy, const Args& a)
        : backend(b), keys(rdzv_keys(run)) {
        const auto pid = std::to_string(::getpid());
        for (int i = 0; i < a.nodes; ++i) {
            NodeInfo n;
            n.hostname = "bench-node-" + std::to_string(i);
            n.id = n.hostname + ":" + pid + ":" + run;
            n.addr = "127.0.0.1";
            n.nproc = 1;
            n.max_restarts = policy.max_restarts;
            nodes.push_back(std::move(n));
        }
        policy.lost_after = a.heartbeat * 3;
        policy.heartbeat = a.heartbeat;
        policy.last_call = a.last_call;
        if (b.is_etcd())
            start_etcd(policy, a);
        else
            start_c10d(policy, a);
    }

    ~Job() {
        sessions.clear();  // their threads first: they talk to the store
        coordinator.reset();
        // The campaigners first, the leader last: no other agent takes the role over meanwhile.
        std::stable_partition(leaderships.begin(), leaderships.end(),
                              [](const auto& l) { return l && !l->leads(); });
        for (auto& l : leaderships) l.reset();
        round_stores.clear();
        server.reset();
        if (backend.is_etcd()) {
            try {
                etcd::Client c(backend.client(milliseconds(10'000), milliseconds(500)));
                c.delete_range(keys.prefix, etcd::prefix_end(keys.prefix));
            } catch (const rdzv::StoreError& e) {
                std::fprintf(stderr, "bench: could not remove %s: %s\n", keys.prefix.c_str(),
                             e.what());
            }
        }
    }

    RdzvSessionOptions session_options(int i, const Args& a) const {
        RdzvSessionOptions so;
        so.keys = keys;
        so.self = nodes[static_cast<std::size_t>(i)];
        so.nnodes = NodeRange{a.nodes, a.nodes};
        so.settings = settings(a);
        so.logger = quiet_logger();
        so.on_waiting = [](const JoinProgress&) {};
        return so;
    }

    void start_c10d(CoordinatorPolicy policy, const Args& a) {
        rdzv::TcpStoreServerOptions o;
        o.host = "127.0.0.1";
        o.logger = quiet_logger();
        o.clock_key = keys.clock();  // the agents' clock offsets, as start_multi_node sets it
        server = std::make_unique<rdzv::TcpStoreServer>(std::move(o));
        CoordinatorOptions co;
        co.store = HostPort{"127.0.0.1", server->port()};
        co.keys = keys;
        policy.master_addr = "127.0.0.1";
        policy.master_port = server->port();
        co.policy = policy;
        co.heartbeat = a.heartbeat;
        co.clear_worker_keys = [s = server.get()] { s->clear_except(kRdzvKeyRoot); };
        co.logger = quiet_logger();
        coordinator = std::make_unique<Coordinator>(std::move(co));
        for (int i = 0; i < a.nodes; ++i) {
            auto so = session_options(i, a);
            so.store = HostPort{"127.0.0.1", server->port()};
            sessions.push_back(std::make_unique<RdzvSession>(std::move(so)));
        }
    }

    void start_etcd(const CoordinatorPolicy& policy, const Args& a) {
        const auto client = backend.client(settings(a).read_timeout, a.heartbeat);
        const auto lost_after_ms = (a.heartbeat * 3).count();
        for (int i = 0; i < a.nodes; ++i) {
            EtcdLeadershipOptions lo;
            lo.client = client;
            lo.self_id = nodes[static_cast<std::size_t>(i)].id;
            lo.lease_ttl_s = std::max<std::int64_t>(2, (lost_after_ms + 999) / 1000);
            lo.coordinator.keys = keys;
            lo.coordinator.policy = policy;  // master_addr empty: group rank 0's round store
            lo.coordinator.heartbeat = a.heartbeat;
            lo.coordinator.logger = quiet_logger();
            leaderships.push_back(std::make_unique<EtcdLeadership>(std::move(lo)));
            round_stores.push_back(std::make_unique<RoundStore>("127.0.0.1", quiet_logger()));
        }
        // Election is not what is timed: wait (polling, at most the timeout) for a leader.
        const auto deadline = Clock::now() + a.timeout;
        while (std::none_of(leaderships.begin(), leaderships.end(),
                            [](const auto& l) { return l->leads(); })) {
            require(Clock::now() < deadline, "etcd: no agent took the coordinator role");
            std::this_thread::sleep_for(milliseconds(10));
        }
        for (int i = 0; i < a.nodes; ++i) {
            auto so = session_options(i, a);
            so.store = HostPort{backend.members.front().host, backend.members.front().port};
            so.store_name = backend.label;
            so.store_has_clock = false;
            so.connect = [client](milliseconds io_timeout) {
                etcd::EtcdStoreOptions eo;
                eo.client = client;
                eo.client.io_timeout = std::min(eo.client.io_timeout, io_timeout);
                return std::unique_ptr<rdzv::Store>(
                    std::make_unique<etcd::EtcdStore>(std::move(eo)));
            };
            so.before_join = [s = round_stores[static_cast<std::size_t>(i)].get()] {
                return s->renew();
            };
            sessions.push_back(std::make_unique<RdzvSession>(std::move(so)));
        }
    }

    /// The agent to remove: the last one that does not coordinate (its leaving must not move the
    /// coordinator role: that is another bench).
    int victim() const {
        for (int i = static_cast<int>(sessions.size()) - 1; i >= 0; --i) {
            if (leaderships.empty() || !leaderships[static_cast<std::size_t>(i)]->leads()) return i;
        }
        throw std::runtime_error("no agent to remove");
    }

    /// Every agent joins; `placements` gets each one's placement.
    void join_all(Tally& joined, std::vector<NodePlacement>& placements) {
        for (std::size_t i = 0; i < sessions.size(); ++i) {
            sessions[i]->join(
                [&joined, &placements, i](NodePlacement p) {
                    placements[i] = std::move(p);
                    joined.hit();
                },
                [&joined](const RendezvousError& e) { joined.fail(e.what()); });
        }
    }
};

// ---- the runs ---------------------------------------------------------------------------------

using StoreFactory = std::function<std::unique_ptr<rdzv::Store>()>;

std::string floor_run(const StoreFactory& open, const Args& a,
                      std::optional<etcd::Endpoint> member) {
    std::vector<std::unique_ptr<rdzv::Store>> clients;
    for (int i = 0; i < a.nodes; ++i) clients.push_back(open());
    const std::string counter = "/bench/floor/count", done_key = "/bench/floor/done";
    std::latch ready(a.nodes), go(1);
    Tally finished;
    std::vector<std::thread> threads;
    for (int i = 0; i < a.nodes; ++i) {
        threads.emplace_back([&, c = clients[static_cast<std::size_t>(i)].get()] {
            ready.count_down();
            go.wait();
            try {
                if (c->add(counter, 1) == a.nodes) c->set(done_key, "1");
                c->wait({done_key}, a.timeout);
                finished.hit();
            } catch (const std::exception& e) {
                finished.fail(e.what());
            }
        });
    }
    ready.wait();
    EtcdCounters etcd(std::move(member));
    const auto t0 = Clock::now();
    go.count_down();
    std::string error;
    try {
        finished.wait(a.nodes, t0 + a.timeout + std::chrono::seconds(5), "floor");
    } catch (const std::exception& e) {
        error = e.what();
        for (auto& c : clients) c->interrupt();
    }
    for (auto& t : threads) t.join();
    require(error.empty(), error);
    return "{\"barrier_ms\": " + fixed(ms_between(t0, finished.last())) + etcd.take() + "}";
}

std::string close_run(const Backend& b, const Args& a) {
    CoordinatorPolicy p;
    p.min_nodes = p.max_nodes = a.nodes;
    p.max_restarts = 3;
    Tally joined;
    std::vector<NodePlacement> placements(static_cast<std::size_t>(a.nodes));
    std::optional<Job> job;
    job.emplace(b, run_id("close"), p, a);
    EtcdCounters etcd(b.first_member());
    const auto t0 = Clock::now();
    job->join_all(joined, placements);
    joined.wait(a.nodes, t0 + a.timeout, "close");
    const auto counted = etcd.take();
    for (const auto& pl : placements) require(pl.round == 0, "close: expected round 0");
    const auto out = "{\"total_ms\": " + fixed(ms_between(t0, joined.last())) +
                     ", \"first_ms\": " + fixed(ms_between(t0, joined.first())) + counted + "}";
    job.reset();
    return out;
}

std::string rejoin_run(const Backend& b, const Args& a) {
    CoordinatorPolicy p;
    p.min_nodes = a.nodes - 1;
    p.max_nodes = a.nodes;
    p.max_restarts = 3;
    Tally joined, ended, rejoined;
    std::mutex mu;
    std::string reason;
    int next_round = -1;
    std::vector<NodePlacement> placements(static_cast<std::size_t>(a.nodes));
    std::optional<Job> job;
    job.emplace(b, run_id("rejoin"), p, a);
    const auto deadline = Clock::now() + a.timeout;
    job->join_all(joined, placements);
    joined.wait(a.nodes, deadline, "rejoin: the first round");

    const int victim = job->victim();
    for (int i = 0; i < a.nodes; ++i) {
        if (i == victim) continue;
        auto* session = job->sessions[static_cast<std::size_t>(i)].get();
        session->watch(
            placements[static_cast<std::size_t>(i)],
            [&, session](const RoundEnd& end) {
                {
                    std::lock_guard lock(mu);
                    reason = to_text(end.reason) + ": " + end.message;
                }
                ended.hit();
                // The agent stops its workers, then joins again (RoundDriver).
                session->join(
                    [&](const NodePlacement& next) {
                        {
                            std::lock_guard lock(mu);
                            next_round = next.round;
                        }
                        rejoined.hit();
                    },
                    [&](const RendezvousError& e) { rejoined.fail(e.what()); });
            },
            [&](const std::string& lost) { ended.fail(lost); });
    }
    std::this_thread::sleep_for(a.heartbeat * 3);  // steady beating
    require(ended.count() == 0, "rejoin: the round ended before an agent left (" + reason + ")");
    EtcdCounters etcd(b.first_member());
    auto& gone = *job->sessions[static_cast<std::size_t>(victim)];
    const auto left = Clock::now();
    if (!a.silent) gone.report_leaving(0, "bench: leaving");
    gone.stop();
    if (!job->leaderships.empty() && !a.silent) {
        job->leaderships[static_cast<std::size_t>(victim)].reset();  // its process exits
    }
    ended.wait(a.nodes - 1, deadline, "rejoin: the round end");
    rejoined.wait(a.nodes - 1, deadline, "rejoin: the next round");
    const auto counted = etcd.take();
    {
        std::lock_guard lock(mu);
        require(reason.rfind("node-lost", 0) == 0,
                "rejoin: the round ended with '" + reason + "', not node-lost");
        require(next_round == 1, "rejoin: expected round 1, got " + std::to_string(next_round));
    }
    const auto out = "{\"rejoin_ms\": " + fixed(ms_between(ended.first(), rejoined.last())) +
                     ", \"first_ms\": " + fixed(ms_between(ended.first(), rejoined.first())) +
                     ", \"detect_ms\": " + fixed(ms_between(left, ended.first())) + counted + "}";
    job.reset();
    return out;
}

StoreFactory floor_stores(const Backend& b, rdzv::TcpStoreServer* server, const Args& a) {
    if (!b.is_etcd()) {
        return [port = server->port(), &a] {
            rdzv::TcpStoreClientOptions o;
            o.host = "127.0.0.1";
            o.port = port;
            o.io_timeout = a.timeout;
            return std::unique_ptr<rdzv::Store>(std::make_unique<rdzv::TcpStoreClient>(o));
        };
    }
    const auto root = "/ptrun/bench/" + run_id("floor") + "/";
    return [&b, &a, root] {
        etcd::EtcdStoreOptions o;
        o.client = b.client(milliseconds(10'000), a.heartbeat);
        o.root = root;
        return std::unique_ptr<rdzv::Store>(std::make_unique<etcd::EtcdStore>(std::move(o)));
    };
}

std::string run_backend(const Backend& b, const Args& a) {
    std::string floor;
    {
        std::unique_ptr<rdzv::TcpStoreServer> server;
        if (!b.is_etcd()) {
            rdzv::TcpStoreServerOptions o;
            o.host = "127.0.0.1";
            o.logger = quiet_logger();
            server = std::make_unique<rdzv::TcpStoreServer>(std::move(o));
        }
        floor = floor_run(floor_stores(b, server.get(), a), a, b.first_member());
    }
    std::fprintf(stderr, "%s floor: %s\n", b.label.c_str(), floor.c_str());
    const auto close = close_run(b, a);
    std::fprintf(stderr, "%s close: %s\n", b.label.c_str(), close.c_str());
    const auto rejoin = rejoin_run(b, a);
    std::fprintf(stderr, "%s rejoin: %s\n", b.label.c_str(), rejoin.c_str());
    return "{\"members\": " + std::to_string(b.members.size()) + ", \"floor\": " + floor +
           ", \"close\": " + close + ", \"rejoin\": " + rejoin + "}";
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Args a = parse(argc, argv);
        raise_fd_limit();
        std::vector<Backend> backends;
        if (a.c10d) backends.push_back(Backend{"c10d", {}});
        for (const auto& members : a.etcd) {
            backends.push_back(Backend{"etcd-" + std::to_string(members.size()), members});
        }
        require(!backends.empty(), "no backend to run");
        std::string out = "{\"nodes\": " + std::to_string(a.nodes) +
                          ", \"heartbeat_ms\": " + std::to_string(a.heartbeat.count()) +
                          ", \"silent\": " + (a.silent ? "true" : "false");
        for (const auto& b : backends) out += ", \"" + b.label + "\": " + run_backend(b, a);
        std::printf("%s}\n", out.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_rdzv_backends: %s\n", e.what());
        return 1;
    }
}
