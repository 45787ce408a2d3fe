#include "ptrun/watchdog/health_status.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ptrun::watchdog {

const char* state_name(WorkerState state) {
    switch (state) {
        case WorkerState::Starting:
            return "starting";
        case WorkerState::Running:
            return "running";
        case WorkerState::Stopped:
            return "stopped";
        case WorkerState::Hung:
            return "hung";
        case WorkerState::Succeeded:
            return "succeeded";
        case WorkerState::Failed:
            return "failed";
    }
    return "unknown";
}

std::optional<WorkerState> state_named(std::string_view name) {
    for (auto state : kWorkerStates) {
        if (name == state_name(state)) return state;
    }
    return std::nullopt;
}

namespace {

/// The first stopped, hung or failed worker of `workers` in words ("" for none); `host` is named
/// when given.
std::string first_unhealthy(const std::vector<WorkerStatus>& workers, const std::string& host) {
    for (const auto& w : workers) {
        if (w.state == WorkerState::Stopped || w.state == WorkerState::Hung ||
            w.state == WorkerState::Failed) {
            std::string reason =
                fmt::format("rank {} (local rank {}, pid {}", w.rank, w.local_rank, w.pid);
            if (!host.empty()) reason += " on " + host;
            reason += fmt::format(") {}", state_name(w.state));
            if (!w.detail.empty()) reason += ": " + w.detail;
            return reason;
        }
    }
    return "";
}

Health health_from(std::string reason) {
    if (reason.empty()) return Health{true, "ok"};
    return Health{false, std::move(reason)};
}

using nlohmann::json;

json text_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

template <typename T>
json or_null(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}

json worker_json(const WorkerStatus& w, const std::string& host, int node_rank) {
    return {
        {"host", host},
        {"node_rank", node_rank},
        {"local_rank", w.local_rank},
        {"rank", w.rank},
        {"pid", w.pid},
        {"state", state_name(w.state)},
        {"progress_count", w.progress_count},
        {"seconds_since_progress", w.seconds_since_progress
                                       ? nlohmann::json(*w.seconds_since_progress)
                                       : nlohmann::json(nullptr)},
        {"section", w.section ? nlohmann::json(*w.section) : nlohmann::json(nullptr)},
        {"detail", w.detail},
        {"memory_bytes", or_null(w.memory_bytes)},
        {"peak_memory_bytes", or_null(w.peak_memory_bytes)},
        {"cpu_seconds", or_null(w.cpu_seconds)},
        {"oom_kills", w.oom_kills},
    };
}

json node_json(const std::string& host, int node_rank, const std::string& health_endpoint,
               const std::string& phase, double age, const std::vector<WorkerStatus>& workers,
               const std::string& last_failure) {
    const Health h = health_from(first_unhealthy(workers, ""));
    return {{"host", host},
            {"node_rank", node_rank},
            {"health_endpoint", text_or_null(health_endpoint)},
            {"phase", phase},
            {"age_seconds", age},
            {"workers", workers.size()},
            {"healthy", h.ok},
            {"reason", h.reason},
            {"last_failure", text_or_null(last_failure)}};
}

}  // namespace

Health health_of(const StatusSnapshot& s) { return health_from(first_unhealthy(s.workers, "")); }

Health job_health_of(const StatusSnapshot& s) {
    if (s.other_nodes.empty()) return health_of(s);
    std::string reason = first_unhealthy(s.workers, s.host);
    for (const auto& n : s.other_nodes) {
        if (reason.empty()) reason = first_unhealthy(n.workers, n.host);
    }
    return health_from(std::move(reason));
}

std::string status_json(const StatusSnapshot& s) {
    const Health h = job_health_of(s);
    std::vector<std::pair<int, json>> by_rank;
    for (const auto& w : s.workers)
        by_rank.emplace_back(w.rank, worker_json(w, s.host, s.node_rank));
    json nodes = json::array();
    nodes.push_back(
        node_json(s.host, s.node_rank, s.health_endpoint, s.phase, 0, s.workers, s.last_failure));
    for (const auto& n : s.other_nodes) {
        for (const auto& w : n.workers)
            by_rank.emplace_back(w.rank, worker_json(w, n.host, n.node_rank));
        nodes.push_back(node_json(n.host, n.node_rank, n.health_endpoint, n.phase, n.age_seconds,
                                  n.workers, n.last_failure));
    }
    std::stable_sort(by_rank.begin(), by_rank.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    json workers = json::array();
    for (auto& [rank, w] : by_rank) workers.push_back(std::move(w));
    json ready = nullptr;
    if (s.ready_attempt >= 0) {
        nlohmann::json phases = nlohmann::json::array();  // in order: a JSON object has none
        for (const auto& [name, seconds] : s.startup_phases) phases.push_back({name, seconds});
        ready = {{"attempt", s.ready_attempt},
                 {"line", s.ready_line},
                 {"seconds", s.ready_seconds},
                 {"phases", phases}};
    }
    const nlohmann::json doc = {
        {"run_id", s.run_id},
        {"host", s.host},
        {"node_rank", s.node_rank},
        {"health_endpoint", text_or_null(s.health_endpoint)},
        {"round", s.round},
        {"restart_count", s.restart_count},
        {"generation", s.generation},
        {"phase", s.phase},
        {"healthy", h.ok},
        {"reason", h.reason},
        {"uptime_seconds", s.uptime_seconds},
        {"world_size", s.world_size},
        {"nodes", s.nodes},
        {"log_dir", text_or_null(s.log_dir)},
        {"last_failure", text_or_null(s.last_failure)},
        {"hangs", s.hangs},
        {"ready", std::move(ready)},
        {"spares", s.spares},
        {"node_states", std::move(nodes)},
        {"workers", std::move(workers)},
    };
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ptrun::watchdog
