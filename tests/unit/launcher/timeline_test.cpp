#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ptrun/launcher/timeline/chrome_trace.hpp"
#include "ptrun/launcher/timeline/ready_line.hpp"
#include "ptrun/launcher/timeline/timeline_event.hpp"
#include "ptrun/launcher/timeline/worker_events.hpp"

using namespace ptrun::launcher;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

/// Two nodes of two ranks each; node2's clock runs 1000 s ahead of the store host's.
std::vector<NodeTimeline> two_nodes(bool with_pg = true) {
    std::vector<NodeTimeline> nodes(2);
    nodes[0].node = "node1";
    nodes[1].node = "node2";
    nodes[1].group_rank = 1;
    const std::int64_t skew = 1000'000 * static_cast<std::int64_t>(kMs);
    nodes[1].offset_ns = -skew;
    for (int n = 0; n < 2; ++n) {
        auto at = [&](std::uint64_t ms) {
            return ms * kMs + (n ? static_cast<std::uint64_t>(skew) : 0);
        };
        auto& t = nodes[static_cast<std::size_t>(n)];
        add_event(t, {at(0), 0, -1, Phase::AgentStart, ""});
        add_event(t, {at(1), 0, -1, Phase::RendezvousJoin, ""});
        add_event(t, {at(4), 0, -1, Phase::RoundClosed, ""});
        for (int lr = 0; lr < 2; ++lr) {
            int rank = n * 2 + lr;
            std::uint64_t slow = rank == 3 ? 400 : 0;
            add_event(t, {at(5), 0, rank, Phase::Spawn, ""});
            add_event(t, {at(9), 0, rank, Phase::Started, ""});
            add_event(t, {at(100), 0, rank, Phase::PythonUp, ""});
            if (with_pg) {
                add_event(t, {at(800 + slow), 0, rank, Phase::ProcessGroupStart, ""});
                add_event(t, {at(1400), 0, rank, Phase::ProcessGroupReady, ""});
            }
            add_event(t, {at(1450), 0, rank, Phase::FirstProgress, ""});
        }
    }
    return nodes;
}

}  // namespace

TEST_CASE("ready line: phases along the slowest path add up, offsets applied",
          "[launcher][timeline]") {
    auto b = ready_breakdown(two_nodes(), 0, 0);
    REQUIRE(b);
    CHECK(b->missing.empty());
    CHECK(b->ranks == 4);
    CHECK(b->nodes == 2);
    CHECK(b->total_s == Approx(1.45));
    CHECK(*b->rendezvous_s == Approx(0.004));
    CHECK(*b->spawn_s == Approx(0.005));
    CHECK(*b->python_s == Approx(1.191));
    CHECK(*b->process_group_s == Approx(0.2));
    CHECK(*b->first_step_s == Approx(0.05));
    CHECK(b->slowest_rank == 3);
    CHECK(ready_line(*b) ==
          "4 ranks on 2 nodes ready 1.45 s after start: rendezvous 4 ms, spawn 5 ms, "
          "python+imports 1.19 s "
          "(slowest: rank 3 on node2, 1.19 s), process group 200 ms, first step +50 ms");
}

TEST_CASE("ready line: without init_process_group, up to the first progress",
          "[launcher][timeline]") {
    auto b = ready_breakdown(two_nodes(false), 0, 0);
    REQUIRE(b);
    CHECK_FALSE(b->python_s);
    CHECK(ready_line(*b) ==
          "4 ranks on 2 nodes ready 1.45 s after start: rendezvous 4 ms, spawn 5 ms, first "
          "progress +1.44 s "
          "(slowest: rank 0 on node1, 1.44 s)");
}

TEST_CASE("ready line: the ranks still missing are named", "[launcher][timeline]") {
    auto nodes = two_nodes();
    std::erase_if(nodes[1].events, [](const TimelineEvent& e) {
        return e.rank == 3 && e.phase == Phase::FirstProgress;
    });
    auto b = ready_breakdown(nodes, 0, 120'000 * kMs);
    REQUIRE(b);
    REQUIRE(b->missing == std::vector<MissingRank>{{3, "node2"}});
    CHECK(
        ready_line(*b) ==
        "4 ranks on 2 nodes not ready 120.00 s after start: no progress yet from rank 3 on node2");
    CHECK_FALSE(ready_breakdown(nodes, 1, 0));  // no rank of attempt 1 started
}

TEST_CASE("ready line: two agents on one host are two nodes", "[launcher][timeline]") {
    // Issue 35.6: agents were counted by host name ("4 ranks on 1 node").
    auto nodes = two_nodes();
    nodes[1].node = nodes[0].node;
    auto b = ready_breakdown(nodes, 0, 0);
    REQUIRE(b);
    CHECK(b->nodes == 2);
    CHECK_THAT(ready_line(*b), Catch::StartsWith("4 ranks on 2 nodes ready"));
}

TEST_CASE("ready line: the job's ranks no node's timeline has are missing too",
          "[launcher][timeline]") {
    auto nodes = two_nodes();
    nodes.pop_back();                                      // node2 (ranks 2 and 3) sent no timeline
    CHECK(ready_breakdown(nodes, 0, 0)->missing.empty());  // without the world size: ready
    auto b = ready_breakdown(nodes, 0, 120'000 * kMs, 4);
    REQUIRE(b);
    REQUIRE(b->missing == std::vector<MissingRank>{{2, ""}, {3, ""}});
    CHECK(ready_line(*b) ==
          "2 ranks on 1 node not ready 120.00 s after start: no progress yet from rank 2 (its "
          "node sent no timeline), rank 3 (its node sent no timeline)");
    CHECK(ready_breakdown(two_nodes(), 0, 0, 4)->missing.empty());
}

TEST_CASE("timeline JSON round trip, hostile input refused", "[launcher][timeline]") {
    auto nodes = two_nodes();
    CHECK(decode_node_timeline(encode(nodes[1])) == nodes[1]);
    CHECK_THROWS_WITH(decode_node_timeline("nope"), "a node's timeline is not JSON");
    CHECK_THROWS_WITH(
        decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,)"
                             R"("events":[[1,0,0,"bogus",""]]})"),
        "a node's timeline names an unknown phase");
    CHECK_THROWS_WITH(
        decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,)"
                             R"("events":[[1,-1,0,"spawn",""]]})"),
        "a node's timeline has a negative attempt or rank");
    CHECK_THROWS_AS(decode_node_timeline(R"({"node":"a"})"), std::runtime_error);
    std::string many = R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,"events":[)";
    for (std::size_t i = 0; i <= kMaxNodeEvents; ++i)
        many += std::string(i ? "," : "") + R"([1,0,0,"spawn",""])";
    CHECK_THROWS_WITH(decode_node_timeline(many + "]}"),
                      "a node's timeline has more than 4096 events");
}

TEST_CASE("a node keeps at most kMaxNodeEvents, the oldest attempt's going first",
          "[launcher][timeline]") {
    NodeTimeline t;
    for (std::size_t i = 0; i < kMaxNodeEvents; ++i) add_event(t, {i, 0, 0, Phase::Spawn, ""});
    add_event(t, {1, 1, 0, Phase::Spawn, std::string(300, 'x')});
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].attempt == 1);
    CHECK(t.events[0].detail.size() == kMaxEventDetail);
    for (std::size_t i = 1; i < kMaxNodeEvents + 10; ++i) add_event(t, {i, 1, 0, Phase::Spawn, ""});
    CHECK(t.events.size() == kMaxNodeEvents);
}

TEST_CASE("chrome trace: a process per node, a track per rank, offsets applied",
          "[launcher][timeline]") {
    auto nodes = two_nodes();
    add_event(nodes[1], {static_cast<std::uint64_t>(1000'000 * kMs + 2000 * kMs), 0, 3, Phase::Exit,
                         "exit code 0"});
    auto trace = nlohmann::json::parse(chrome_trace(nodes, 3000 * kMs));
    CHECK(trace["otherData"]["nodes"][1]["node"] == "node2");
    CHECK(trace["otherData"]["nodes"][1]["offset_ns"] ==
          -static_cast<std::int64_t>(1000'000 * kMs));
    int spans = 0;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] != "X") continue;
        ++spans;
        CHECK(e["ts"].get<double>() >= 0);
        CHECK(e["ts"].get<double>() < 3000'000);  // microseconds: node2's skew is gone
        if (e["tid"] == 4 && e["name"] == "running") CHECK(e["args"]["exit"] == "exit code 0");
        if (e["tid"] == 4 && e["name"] == "running")
            CHECK(e["dur"].get<double>() == Approx(550'000));
    }
    CHECK(spans ==
          4 * 6);  // spawn, python start, python+imports, process group, until first step, running
}

TEST_CASE("worker event messages", "[launcher][timeline]") {
    CHECK(parse_worker_event("ptrun-event 1 python_up 123") ==
          WorkerEventMessage{Phase::PythonUp, 123});
    CHECK(parse_worker_event("ptrun-event 1 first_progress 9\n") ==
          WorkerEventMessage{Phase::FirstProgress, 9});
    CHECK_FALSE(parse_worker_event("ptrun-event 1 spawn 9"));  // the agent's own phase
    CHECK_FALSE(parse_worker_event("ptrun-event 2 python_up 9"));
    CHECK_FALSE(parse_worker_event("ptrun-event 1 python_up -9"));
    CHECK_FALSE(parse_worker_event("ptrun-event 1 python_up 9x"));
    CHECK_FALSE(parse_worker_event("ptrun-event 1 python_up "));
    CHECK_FALSE(parse_worker_event("ptrun-event 1 python_up 99999999999999999999999"));
}

TEST_CASE("events channel: unnamed, and the kernel names the sender", "[launcher][timeline]") {
    auto channel = EventSocket::open();
    CHECK(EventSocket::address(4) == "fd:4");
    CHECK_FALSE(channel.receive());
    sockaddr_un bound{};  // no name anyone could send to (an abstract one was flooded: 35.7)
    socklen_t len = sizeof bound;
    REQUIRE(::getsockname(channel.fd(), reinterpret_cast<sockaddr*>(&bound), &len) == 0);
    CHECK(len == sizeof(sa_family_t));
    std::string text = "ptrun-event 1 python_up 5";
    REQUIRE(::send(channel.sender(), text.data(), text.size(), 0) ==
            static_cast<ssize_t>(text.size()));
    std::string big(500, 'x');
    REQUIRE(::send(channel.sender(), big.data(), big.size(), 0) ==
            static_cast<ssize_t>(big.size()));
    auto got = channel.receive();
    REQUIRE(got);
    CHECK(got->text == text);
    CHECK(got->pid == ::getpid());
    auto oversized = channel.receive();
    REQUIRE(oversized);
    CHECK(oversized->text.empty());
    CHECK_FALSE(channel.receive());
}

TEST_CASE("ready line: the wait for --preload's zygote is its own phase", "[launcher][timeline]") {
    auto nodes = two_nodes();
    add_event(nodes[0], {300 * kMs, 0, -1, Phase::PreloadSettled, "ready"});
    for (auto& e : nodes[0].events)
        if (is_rank_phase(e.phase) && e.t_ns < 300 * kMs) e.t_ns += 300 * kMs;
    auto b = ready_breakdown({nodes[0]}, 0, 0);
    REQUIRE(b);
    CHECK(*b->preload_s == Approx(0.296));
    CHECK(*b->spawn_s == Approx(0.009));
    CHECK(ready_line(*b).starts_with(
        "2 ranks on 1 node ready 1.45 s after start: rendezvous 4 ms, preload 296 ms, "
        "spawn 9 ms, python+imports"));
}

TEST_CASE("startup phases as /metrics names them", "[launcher][timeline]") {
    auto b = ready_breakdown(two_nodes(), 0, 0);
    REQUIRE(b);
    auto phases = startup_phases(*b);
    REQUIRE(phases.size() == 5);
    CHECK(phases[0].first == "rendezvous");
    CHECK(phases[2] == std::pair<std::string, double>{"python_imports", *b->python_s});
    CHECK(phases[4].first == "first_step");
    auto plain = ready_breakdown(two_nodes(false), 0, 0);
    CHECK(startup_phases(*plain).back().first == "first_progress");
}

TEST_CASE("timeline JSON: numbers that are no integer of the field's type are refused",
          "[launcher][timeline]") {
    const std::string head = R"({"node":"a","offset_ns":0,"offset_error_ns":0,"events":[],)";
    for (const char* bad :
         {R"("group_rank":1e30})", R"("group_rank":1.5})", R"("group_rank":4294967296})"}) {
        CHECK_THROWS_WITH(decode_node_timeline(head + bad),
                          Catch::StartsWith("a node's timeline is malformed"));
    }
    CHECK_THROWS_WITH(
        decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":-1,)"
                             R"("events":[]})"),
        Catch::StartsWith("a node's timeline is malformed"));
    CHECK_THROWS_WITH(
        decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,)"
                             R"("events":[[1,1e30,0,"spawn",""]]})"),
        Catch::StartsWith("a node's timeline is malformed"));
}

TEST_CASE("memory samples: JSON round trip, halved beyond kMaxMemorySamples",
          "[launcher][timeline][usage]") {
    NodeTimeline t;
    t.node = "node1";
    add_memory_sample(t, {5, 0, 1000, 2000});
    add_memory_sample(t, {6, 1, std::nullopt, 3000});
    CHECK(decode_node_timeline(encode(t)) == t);
    // An older ptrun's timeline has no "memory".
    CHECK(decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,)"
                               R"("events":[]})")
              .memory.empty());
    CHECK_THROWS_WITH(
        decode_node_timeline(R"({"node":"a","group_rank":0,"offset_ns":0,"offset_error_ns":0,)"
                             R"("events":[],"memory":[[1,-2,null,null]]})"),
        "a node's timeline has a negative rank");
    NodeTimeline many;
    for (std::uint64_t i = 0; i < kMaxMemorySamples + 1; ++i)
        add_memory_sample(many, {i, 0, i, std::nullopt});
    REQUIRE(many.memory.size() == kMaxMemorySamples / 2 + 1);
    CHECK(many.memory.front().t_ns == 1);  // every other one kept: the whole run, coarser
    CHECK(many.memory.back().t_ns == kMaxMemorySamples);
}

TEST_CASE("chrome trace: a rank's memory is a counter track of its node", "[launcher][timeline]") {
    auto nodes = two_nodes();
    add_memory_sample(nodes[1], {static_cast<std::uint64_t>(1000'000 * kMs + 1500 * kMs), 3,
                                 50U << 20, 60U << 20});
    add_memory_sample(nodes[1],
                      {static_cast<std::uint64_t>(1000'000 * kMs + 2000 * kMs), 3, 0, 70U << 20});
    auto trace = nlohmann::json::parse(chrome_trace(nodes, 3000 * kMs));
    std::vector<nlohmann::json> counters;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "C") counters.push_back(e);
    REQUIRE(counters.size() == 4);
    CHECK(counters[0]["name"] == "rank 3 memory");
    CHECK(counters[0]["pid"] == 1);
    CHECK(counters[0]["ts"].get<double>() == Approx(1500'000));  // node2's offset applied
    CHECK(counters[0]["args"]["bytes"] == 50U << 20);
    CHECK(counters[1]["name"] == "rank 3 peak memory");
    CHECK(counters[2]["args"]["bytes"] == 0);  // it exited
    CHECK(counters[3]["args"]["bytes"] == 70U << 20);
}
