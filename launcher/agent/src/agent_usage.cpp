// What each worker used (issue 39): every run of a local slot adds its wall time, CPU time and
// peak (read once as it was reaped: ProcessLauncher, worker_usage.hpp); the run's end prints one
// table per node. A running worker is read on demand only (live_usage.hpp): for /status and
// /metrics, and as a memory sample for trace.json when ptrun acts for it anyway (its timeline
// events, each /status or /metrics request, its exit). No thread, no timer of its own.

#include <algorithm>

#include "agent_impl.hpp"
#include "ptrun/progress/heartbeat_file.hpp"

namespace ptrun::launcher {

void Agent::Impl::usage_started(Worker& w) {
    const auto slot = static_cast<std::size_t>(w.slot);
    if (used.size() <= slot) used.resize(slot + 1);
    used[slot].rank = w.end.rank;
    w.started_at = std::chrono::steady_clock::now();
    w.counted = false;
    w.peak_seen = 0;
    w.cpu_seen = 0;
    // No memory sample here: the process has not exec'd yet (its resident set is ptrun's own),
    // and a read per worker would sit on the launch path. Its track starts at its first event.
}

std::optional<LiveUsage> Agent::Impl::sample_memory(Worker& w) {
    if (!w.alive || w.end.pid <= 0) return std::nullopt;
    LiveUsage now = launcher->usage_now(w.end.pid);
    if (now.peak_bytes) w.peak_seen = std::max(w.peak_seen, *now.peak_bytes);
    if (now.cpu_seconds) w.cpu_seen = std::max(w.cpu_seen, *now.cpu_seconds);
    if (now.memory_bytes || now.peak_bytes) {
        add_memory_sample(
            timeline, {progress::monotonic_now_ns(), w.end.rank, now.memory_bytes, now.peak_bytes});
    }
    return now;
}

void Agent::Impl::usage_status(Worker& w, watchdog::WorkerStatus& ws) {
    const auto slot = static_cast<std::size_t>(w.slot);
    RankUse so_far = slot < used.size() ? used[slot] : RankUse{};
    std::optional<LiveUsage> now;
    if (!w.counted) now = sample_memory(w);  // a run not in `used` yet: it runs
    if (now) {
        ws.memory_bytes = now->memory_bytes;
        if (now->cpu_seconds)
            so_far.cpu_seconds = so_far.cpu_seconds.value_or(0) + *now->cpu_seconds;
        if (now->peak_bytes && (!so_far.peak_bytes || *now->peak_bytes > *so_far.peak_bytes))
            so_far.peak_bytes = now->peak_bytes;
        so_far.oom_kills += now->oom_kills;
    }
    ws.peak_memory_bytes = so_far.peak_bytes;
    ws.cpu_seconds = so_far.cpu_seconds;
    ws.oom_kills = static_cast<std::uint64_t>(so_far.oom_kills);
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
    // As reaped, or what was read while it ran when that was more (wait4's peak and VmHWM differ
    // by a few pages; a worker killed with its attempt is not reaped yet): /metrics' counters
    // never go back.
    auto cpu = usage.cpu_seconds;
    if (w.cpu_seen > cpu.value_or(0)) cpu = w.cpu_seen;
    if (cpu) u.cpu_seconds = u.cpu_seconds.value_or(0) + *cpu;
    auto peak = usage.peak_bytes;
    if (w.peak_seen > peak.value_or(0)) peak = w.peak_seen;
    if (peak && (!u.peak_bytes || *peak > *u.peak_bytes)) {
        u.peak_bytes = peak;
        u.peak_from_cgroup = usage.peak_from_cgroup;
    }
    u.oom_kills += usage.oom_kills;
    // Its memory track ends: nothing held now (a worker killed with its attempt goes next).
    add_memory_sample(timeline, {progress::monotonic_now_ns(), w.end.rank, 0, peak});
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
