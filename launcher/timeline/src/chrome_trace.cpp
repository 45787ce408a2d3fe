#include "ptrun/launcher/timeline/chrome_trace.hpp"

#include <utility>
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace ptrun::launcher {

namespace {

/// What a rank does from an event of `phase` until its next one.
const char* span_after(Phase phase, bool next_is_python) {
    switch (phase) {
        case Phase::Spawn:
            return "spawn";
        case Phase::Started:
            return next_is_python ? "python start" : "program start";
        case Phase::PythonUp:
            return "python+imports";
        case Phase::ProcessGroupStart:
            return "process group";
        case Phase::ProcessGroupReady:
            return "until first step";
        case Phase::FirstProgress:
            return "running";
        default:
            return "";
    }
}

/// Order of a rank's phases within one attempt.
int phase_order(Phase phase) { return static_cast<int>(phase); }

double micros(std::int64_t ns, std::int64_t origin) {
    return static_cast<double>(ns - origin) / 1000.0;
}

}  // namespace

std::string chrome_trace(const std::vector<NodeTimeline>& nodes, std::uint64_t now_ns) {
    std::int64_t origin = std::numeric_limits<std::int64_t>::max();
    for (const auto& node : nodes)
        for (const auto& e : node.events)
            origin = std::min(origin, static_cast<std::int64_t>(e.t_ns) + node.offset_ns);
    if (origin == std::numeric_limits<std::int64_t>::max())
        origin = static_cast<std::int64_t>(now_ns);

    nlohmann::json events = nlohmann::json::array();
    nlohmann::json offsets = nlohmann::json::array();
    for (const auto& node : nodes) {
        int pid = node.group_rank;
        offsets.push_back({{"pid", pid},
                           {"node", node.node},
                           {"offset_ns", node.offset_ns},
                           {"error_ns", node.offset_error_ns}});
        events.push_back(
            {{"ph", "M"},
             {"pid", pid},
             {"name", "process_name"},
             {"args", {{"name", "node " + std::to_string(node.group_rank) + ": " + node.node}}}});
        events.push_back({{"ph", "M"},
                          {"pid", pid},
                          {"name", "process_sort_index"},
                          {"args", {{"sort_index", pid}}}});
        events.push_back({{"ph", "M"},
                          {"pid", pid},
                          {"tid", 0},
                          {"name", "thread_name"},
                          {"args", {{"name", "ptrun"}}}});
        // (rank, attempt) -> its events in phase order.
        std::map<std::pair<int, int>, std::vector<const TimelineEvent*>> ranks;
        for (const auto& e : node.events) {
            std::int64_t t = static_cast<std::int64_t>(e.t_ns) + node.offset_ns;
            if (e.rank >= 0 && is_rank_phase(e.phase)) {
                ranks[{e.rank, e.attempt}].push_back(&e);
                continue;
            }
            nlohmann::json args{{"attempt", e.attempt}};
            if (!e.detail.empty()) args["detail"] = e.detail;
            events.push_back({{"ph", "i"},
                              {"s", "t"},
                              {"pid", pid},
                              {"tid", 0},
                              {"ts", micros(t, origin)},
                              {"name", std::string(phase_name(e.phase))},
                              {"args", std::move(args)}});
        }
        for (const auto& m : node.memory) {
            const std::int64_t t = static_cast<std::int64_t>(m.t_ns) + node.offset_ns;
            const std::string track = "rank " + std::to_string(m.rank);
            for (const auto& [name, value] :
                 {std::pair{track + " memory", m.bytes}, {track + " peak memory", m.peak_bytes}}) {
                if (!value) continue;
                events.push_back({{"ph", "C"},
                                  {"pid", pid},
                                  {"ts", micros(t, origin)},
                                  {"name", name},
                                  {"args", {{"bytes", *value}}}});
            }
        }
        std::map<int, bool> named;
        for (auto& [key, list] : ranks) {
            auto [rank, attempt] = key;
            int tid = rank + 1;
            if (!named[rank]) {
                named[rank] = true;
                events.push_back({{"ph", "M"},
                                  {"pid", pid},
                                  {"tid", tid},
                                  {"name", "thread_name"},
                                  {"args", {{"name", "rank " + std::to_string(rank)}}}});
                events.push_back({{"ph", "M"},
                                  {"pid", pid},
                                  {"tid", tid},
                                  {"name", "thread_sort_index"},
                                  {"args", {{"sort_index", tid}}}});
            }
            std::stable_sort(list.begin(), list.end(),
                             [](const TimelineEvent* a, const TimelineEvent* b) {
                                 return phase_order(a->phase) < phase_order(b->phase);
                             });
            for (std::size_t i = 0; i < list.size(); ++i) {
                const TimelineEvent& e = *list[i];
                if (e.phase == Phase::Exit) break;
                std::int64_t begin = static_cast<std::int64_t>(e.t_ns) + node.offset_ns;
                bool last = i + 1 == list.size();
                std::int64_t end =
                    last ? static_cast<std::int64_t>(now_ns)
                         : static_cast<std::int64_t>(list[i + 1]->t_ns) + node.offset_ns;
                bool next_python = !last && list[i + 1]->phase == Phase::PythonUp;
                nlohmann::json args{{"attempt", attempt}};
                if (!last && list[i + 1]->phase == Phase::Exit) args["exit"] = list[i + 1]->detail;
                if (last) args["still going"] = true;
                events.push_back({{"ph", "X"},
                                  {"pid", pid},
                                  {"tid", tid},
                                  {"ts", micros(begin, origin)},
                                  {"dur", std::max(0.0, micros(end, begin))},
                                  {"name", span_after(e.phase, next_python)},
                                  {"cat", "attempt " + std::to_string(attempt)},
                                  {"args", std::move(args)}});
            }
        }
    }
    nlohmann::json trace{
        {"traceEvents", std::move(events)},
        {"displayTimeUnit", "ms"},
        {"otherData",
         {{"clock", "CLOCK_MONOTONIC of the store host"}, {"nodes", std::move(offsets)}}}};
    return trace.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ptrun::launcher
