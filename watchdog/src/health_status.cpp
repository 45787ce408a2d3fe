#include "ptrun/watchdog/health_status.hpp"

#include <fmt/format.h>

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

Health health_of(const StatusSnapshot& s) {
    for (const auto& w : s.workers) {
        if (w.state == WorkerState::Stopped || w.state == WorkerState::Hung ||
            w.state == WorkerState::Failed) {
            std::string reason = fmt::format("rank {} (local rank {}, pid {}) {}", w.rank,
                                             w.local_rank, w.pid, state_name(w.state));
            if (!w.detail.empty()) reason += ": " + w.detail;
            return Health{false, reason};
        }
    }
    return Health{true, "ok"};
}

std::string status_json(const StatusSnapshot& s) {
    const Health h = health_of(s);
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& w : s.workers) {
        workers.push_back({
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
        });
    }
    auto text_or_null = [](const std::string& text) {
        return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
    };
    nlohmann::json ready = nullptr;
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
        {"round", s.round},
        {"restart_count", s.restart_count},
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
        {"workers", workers},
    };
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ptrun::watchdog
