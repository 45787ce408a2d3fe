// bench/rendezvous: time ptrun's multi-node rendezvous at scale, in one process. It hosts the real
// TcpStoreServer and the real launcher Coordinator (as the store host's agent does) and simulates
// N agents (sim_agents.hpp) from one epoll thread.
//   bench_rdzv_load --nodes N [--heartbeat-ms 200] [--last-call-ms 100] [--timeout-s 120]
// Runs, each with fresh connections against the same server:
//   floor:  N clients ADD 1 to a counter, the N-th SETs "done", all WAIT for it (the store's limit)
//   close:  N agents join one round (min = max = N): first join sent -> last assignment held
//   rejoin: N agents in a running round (min N-1, max N), one stops beating: the first survivor
//           seeing the round end (NodeLost) -> every survivor holding the next round's assignment
// Prints one JSON object. Exits 1 on an error or a timeout.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "event_loop.hpp"
#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "sim_agents.hpp"

namespace {

using namespace ptrun;
using bench::Clock;
using std::chrono::milliseconds;

struct Args {
    int nodes = 64;
    milliseconds heartbeat{200};
    milliseconds last_call{100};
    std::chrono::seconds timeout{120};
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string f = argv[i];
        const int v = std::stoi(argv[i + 1]);
        if (f == "--nodes")
            a.nodes = v;
        else if (f == "--heartbeat-ms")
            a.heartbeat = milliseconds(v);
        else if (f == "--last-call-ms")
            a.last_call = milliseconds(v);
        else if (f == "--timeout-s")
            a.timeout = std::chrono::seconds(v);
        else
            throw std::runtime_error("unknown flag " + f);
    }
    if (a.nodes < 2) throw std::runtime_error("--nodes must be at least 2");
    return a;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The store host as start_multi_node builds it: the server, and a Coordinator over loopback.
struct StoreHost {
    rdzv::TcpStoreServer server{[] {
        rdzv::TcpStoreServerOptions o;
        o.host = "127.0.0.1";
        return o;
    }()};
    std::shared_ptr<spdlog::logger> logger = [] {
        auto l = std::make_shared<spdlog::logger>(
            "coordinator", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        l->set_level(spdlog::level::warn);
        return l;
    }();

    std::unique_ptr<launcher::Coordinator> coordinator(const launcher::RdzvKeys& keys,
                                                       launcher::CoordinatorPolicy p,
                                                       milliseconds heartbeat) {
        launcher::CoordinatorOptions o;
        o.store = launcher::HostPort{"127.0.0.1", server.port()};
        o.keys = keys;
        p.master_addr = "127.0.0.1";
        p.master_port = server.port();
        o.policy = std::move(p);
        o.heartbeat = heartbeat;
        o.clear_worker_keys = [this] { server.clear_except(launcher::kRdzvKeyRoot); };
        o.logger = logger;
        return std::make_unique<launcher::Coordinator>(std::move(o));
    }
};

void require(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
}

std::string floor_run(StoreHost& host, const Args& a) {
    bench::EventLoop loop;
    auto conns = loop.connect(host.server.port(), a.nodes, 256);
    const std::string counter = "/bench/floor/count", done_key = "/bench/floor/done";
    int finished = 0;
    const auto t0 = Clock::now();
    for (auto* c : conns) {
        c->send(bench::add(counter, 1), bench::Reply::I64, [&, c](std::string_view v) {
            std::int64_t n = 0;
            std::memcpy(&n, v.data(), 8);
            if (n == a.nodes) c->send(bench::set(done_key, "1"), bench::Reply::None, {});
            c->send(bench::wait({done_key}), bench::Reply::U8,
                    [&](std::string_view) { ++finished; });
        });
    }
    require(loop.run_until([&] { return finished == a.nodes; }, t0 + a.timeout), "floor timed out");
    char out[96];
    std::snprintf(out, sizeof out, "{\"barrier_ms\": %.2f}", ms_between(t0, Clock::now()));
    return out;
}

std::string close_run(StoreHost& host, const Args& a) {
    const auto keys = launcher::rdzv_keys("bench-close");
    launcher::CoordinatorPolicy p;
    p.min_nodes = p.max_nodes = a.nodes;
    p.max_restarts = 3;
    auto coordinator = host.coordinator(keys, p, milliseconds(5'000));
    bench::EventLoop loop;
    bench::SimAgents agents(loop, host.server.port(), keys, a.nodes, p.max_restarts, false);
    int assigned = 0, pushed = 0;
    std::size_t bytes = 0;
    Clock::time_point last_push, first_assigned;
    const auto t0 = Clock::now();
    for (int i = 0; i < a.nodes; ++i) {
        agents.join(
            i,
            [&](int, int round, std::size_t n) {
                require(round == 0, "close: expected round 0");
                if (assigned++ == 0) first_assigned = Clock::now();
                bytes = n;
            },
            [&](int) {
                if (++pushed == a.nodes) last_push = Clock::now();
            });
    }
    require(loop.run_until([&] { return assigned == a.nodes; }, t0 + a.timeout), "close timed out");
    const auto t1 = Clock::now();
    char out[256];
    std::snprintf(out, sizeof out,
                  "{\"total_ms\": %.2f, \"joins_sent_ms\": %.2f, \"first_assigned_ms\": %.2f, "
                  "\"admission_bytes\": %zu}",
                  ms_between(t0, t1), ms_between(t0, last_push), ms_between(t0, first_assigned),
                  bytes);
    return out;
}

std::string rejoin_run(StoreHost& host, const Args& a) {
    const auto keys = launcher::rdzv_keys("bench-rejoin");
    launcher::CoordinatorPolicy p;
    p.min_nodes = a.nodes - 1;
    p.max_nodes = a.nodes;
    p.max_restarts = 3;
    p.last_call = a.last_call;
    p.lost_after = a.heartbeat * 3;
    auto coordinator = host.coordinator(keys, p, a.heartbeat);
    bench::EventLoop loop;
    bench::SimAgents agents(loop, host.server.port(), keys, a.nodes, p.max_restarts, true);
    const auto deadline = Clock::now() + a.timeout;

    agents.start_beats(a.heartbeat);  // RdzvSession beats from its construction on
    int assigned = 0;
    for (int i = 0; i < a.nodes; ++i) agents.join(i, [&](int, int, std::size_t) { ++assigned; });
    require(loop.run_until([&] { return assigned == a.nodes; }, deadline),
            "rejoin: the first round timed out");

    const int victim = a.nodes - 1;
    std::optional<Clock::time_point> detected;
    int rejoined = 0, next_round = -1, pushed = 0;
    Clock::time_point last_push, first_rejoined;
    std::string reason;
    for (int i = 0; i < victim; ++i) {
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
                        if (++pushed == victim) last_push = Clock::now();
                    });
            },
            [&](int) {
                if (!detected) detected = Clock::now();
            });
    }
    loop.run_until([] { return false; }, Clock::now() + a.heartbeat * 3);  // steady beating
    require(!detected, "rejoin: the round ended before a node was silenced (" + reason + ")");
    const auto silenced = agents.silence(victim);
    require(loop.run_until([&] { return rejoined == victim; }, deadline),
            "rejoin: the next round timed out");
    const auto t1 = Clock::now();
    require(reason.rfind("node-lost", 0) == 0,
            "rejoin: the round ended with '" + reason + "', not node-lost");
    require(next_round == 1, "rejoin: expected round 1");
    char out[256];
    std::snprintf(out, sizeof out,
                  "{\"rejoin_ms\": %.2f, \"joins_sent_ms\": %.2f, \"first_assigned_ms\": %.2f, "
                  "\"detect_after_ms\": %.2f, \"last_call_ms\": %ld}",
                  ms_between(*detected, t1), ms_between(*detected, last_push),
                  ms_between(*detected, first_rejoined), ms_between(silenced, *detected),
                  static_cast<long>(a.last_call.count()));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Args a = parse(argc, argv);
        bench::raise_fd_limit();
        StoreHost host;
        const std::string floor = floor_run(host, a);
        std::fprintf(stderr, "floor: %s\n", floor.c_str());
        const std::string close = close_run(host, a);
        std::fprintf(stderr, "close: %s\n", close.c_str());
        const std::string rejoin = rejoin_run(host, a);
        std::printf("{\"nodes\": %d, \"floor\": %s, \"close\": %s, \"rejoin\": %s}\n", a.nodes,
                    floor.c_str(), close.c_str(), rejoin.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_rdzv_load: %s\n", e.what());
        return 1;
    }
}
