// What each worker used (issue 39): every run of a local slot adds its wall time, CPU time and
// peak (read once as it was reaped: ProcessLauncher, worker_usage.hpp); the run's end prints one
// table per node. Nothing samples: the numbers come with the exits.

#include <algorithm>

#include "agent_impl.hpp"

namespace ptrun::launcher {

void Agent::Impl::usage_started(Worker& w) {
    const auto slot = static_cast<std::size_t>(w.slot);
    if (used.size() <= slot) used.resize(slot + 1);
    used[slot].rank = w.end.rank;
    w.started_at = std::chrono::steady_clock::now();
    w.counted = false;
}

void Agent::Impl::usage_ended(Worker& w, const std::string& ended) {
    if (w.counted) return;
    w.counted = true;
    const auto slot = static_cast<std::size_t>(w.slot);
    if (used.size() <= slot) used.resize(slot + 1);
    auto& u = used[slot];
    const bool first_run = u.ended.empty();
    if (!first_run) u.restarts += 1;
    u.rank = w.end.rank;
    u.ended = ended;
    if (w.started_at != std::chrono::steady_clock::time_point{}) {
        const auto end =
            w.exited_at != std::chrono::steady_clock::time_point{} && w.exited_at >= w.started_at
                ? w.exited_at
                : std::chrono::steady_clock::now();
        u.wall += end - w.started_at;
    }
    const auto& usage = w.end.usage;
    if (usage.cpu_seconds) u.cpu_seconds = u.cpu_seconds.value_or(0) + *usage.cpu_seconds;
    if (usage.peak_bytes && (!u.peak_bytes || *usage.peak_bytes > *u.peak_bytes)) {
        u.peak_bytes = usage.peak_bytes;
        u.peak_from_cgroup = usage.peak_from_cgroup;
    }
}

void Agent::Impl::say_usage_table() {
    std::vector<RankUse> rows;
    for (const auto& u : used) {
        if (!u.ended.empty()) rows.push_back(u);
    }
    if (rows.empty()) return;
    std::stable_sort(rows.begin(), rows.end(),
                     [](const RankUse& a, const RankUse& b) { return a.rank < b.rank; });
    // Info lines, one per row: LOGLEVEL=WARNING keeps them off the console, the run log keeps
    // them (a log line is one line: a newline inside one would be escaped).
    const std::string table = format_usage_table(config.hostname, rows);
    std::size_t start = 0;
    for (auto nl = table.find('\n'); nl != std::string::npos; nl = table.find('\n', start)) {
        log->info("{}", table.substr(start, nl - start));
        start = nl + 1;
    }
}

}  // namespace ptrun::launcher
