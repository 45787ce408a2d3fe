// bench/rendezvous: time ptrun's multi-node rendezvous at scale. It hosts the real TcpStoreServer
// and the real launcher Coordinator (as the store host's agent does) and simulates N agents
// (sim_agents.hpp) from one epoll thread, in this process or (--agent-processes K) in K forked
// processes, a slice each, so that N can exceed one process's descriptors (agent_processes.hpp).
//   bench_rdzv_load --nodes N [--heartbeat-ms 200] [--last-call-ms 100] [--timeout-s 120]
//                   [--agent-processes K] [--conns-per-agent 2] [--clock-samples 0]
//                   [--join-progress 0]
// --conns-per-agent, --clock-samples and --join-progress 1 make the simulated agents more like
// RdzvSession (sim_agents.hpp); the defaults keep the original bench.
// Runs, each with fresh connections against the same server:
//   floor:  N clients ADD 1 to a counter, the N-th SETs "done", all WAIT for it (the store's limit)
//   close:  N agents join one round (min = max = N): first join sent -> last assignment held
//   rejoin: N agents in a running round (min N-1, max N), one stops beating: the first survivor
//           seeing the round end (NodeLost) -> every survivor holding the next round's assignment
// With agent processes, agents beat during close too, and each phase reports the store host's
// resident memory, descriptors and stored bytes (this process hosts only the store then).
// Prints one JSON object. Exits 1 on an error or a timeout.
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "agent_processes.hpp"
#include "event_loop.hpp"
#include "sim_agents.hpp"
#include "store_host.hpp"

namespace {

using namespace ptrun;
using bench::Clock;
using std::chrono::milliseconds;

using Args = bench::LoadArgs;
using bench::StoreHost;

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
        else if (f == "--agent-processes")
            a.agent_processes = v;
        else if (f == "--conns-per-agent")
            a.conns = v;
        else if (f == "--clock-samples")
            a.clock_samples = v;
        else if (f == "--join-progress")
            a.join_progress = v != 0;
        else
            throw std::runtime_error("unknown flag " + f);
    }
    if (a.nodes < 2) throw std::runtime_error("--nodes must be at least 2");
    if (a.conns < 1 || a.conns > 3) throw std::runtime_error("--conns-per-agent is 1, 2 or 3");
    if (a.agent_processes < 0 || a.agent_processes > a.nodes)
        throw std::runtime_error("--agent-processes is 0 (this process) to --nodes");
    return a;
}

bench::SimOptions sim_options(const Args& a, bool beats) {
    bench::SimOptions o;
    o.count = a.nodes;
    o.max_restarts = 3;
    o.conns = a.conns;
    o.beats = beats;
    o.clock_samples = a.clock_samples;
    o.join_progress = a.join_progress;
    return o;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

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
            c->send(bench::wait({done_key}), bench::Reply::Wait,
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
    bench::SimAgents agents(loop, host.server.port(), keys, sim_options(a, false));
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
    bench::SimAgents agents(loop, host.server.port(), keys, sim_options(a, true));
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
        if (a.agent_processes > 0) {
            std::printf("%s\n", bench::run_agent_processes(a).c_str());
            return 0;
        }
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
