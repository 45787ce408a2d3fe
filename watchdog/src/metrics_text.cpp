#include <fmt/format.h>

#include <optional>

#include "ptrun/watchdog/health_status.hpp"

namespace ptrun::watchdog {
namespace {

/// A label value as the exposition format quotes it: \\, \" and \n escaped; bytes outside
/// printable ASCII (the format wants UTF-8; names here are ASCII in practice) become '?'.
std::string label_value(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c < 0x20 || c == 0x7f || static_cast<unsigned char>(c) >= 0x80) {
            out += '?';
        } else {
            out += c;
        }
    }
    return out;
}

/// One metric family's HELP and TYPE lines.
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

/// Calls `each(host, worker)` for this node's workers, then every other node's.
template <typename Each>
void every_worker(const StatusSnapshot& s, Each each) {
    for (const auto& w : s.workers) each(s.host, w);
    for (const auto& n : s.other_nodes) {
        for (const auto& w : n.workers) each(n.host, w);
    }
}

/// `name{host,rank,local_rank} value` for every worker whose `value_of` is known.
template <typename ValueOf>
void per_worker(std::string& out, const StatusSnapshot& s, std::string_view name,
                ValueOf value_of) {
    every_worker(s, [&](const std::string& host, const WorkerStatus& w) {
        const auto value = value_of(w);
        if (!value) return;
        out += fmt::format("{}{{host=\"{}\",rank=\"{}\",local_rank=\"{}\"}} {}\n", name,
                           label_value(host), w.rank, w.local_rank, *value);
    });
}

/// What each worker used: its rank's figures on its node so far, restarts included.
void worker_usage_metrics(std::string& out, const StatusSnapshot& s) {
    family(out, "ptrun_worker_memory_bytes", "gauge",
           "Memory each running worker holds now: its memory cgroup's usage with "
           "--memory-limit-per-worker, else its own resident set (absent when not running).");
    per_worker(out, s, "ptrun_worker_memory_bytes",
               [](const WorkerStatus& w) { return w.memory_bytes; });
    family(out, "ptrun_worker_peak_memory_bytes", "gauge",
           "The largest peak of each rank's workers on its node so far (its memory cgroup's, "
           "else its largest resident set).");
    per_worker(out, s, "ptrun_worker_peak_memory_bytes",
               [](const WorkerStatus& w) { return w.peak_memory_bytes; });
    family(out, "ptrun_worker_cpu_seconds_total", "counter",
           "CPU seconds (user + system) of each rank's workers on its node, restarts included "
           "(a running worker's descendants count once it has waited for them).");
    per_worker(out, s, "ptrun_worker_cpu_seconds_total",
               [](const WorkerStatus& w) { return w.cpu_seconds; });
    family(out, "ptrun_worker_oom_kills_total", "counter",
           "OOM kills of each rank's workers, or of processes in their memory cgroups, restarts "
           "included.");
    per_worker(out, s, "ptrun_worker_oom_kills_total",
               [](const WorkerStatus& w) { return std::optional<std::uint64_t>(w.oom_kills); });
}

}  // namespace

std::string metrics_text(const StatusSnapshot& s) {
    std::string out;
    family(out, "ptrun_info", "gauge", "This ptrun: its run id and host (value 1).");
    out += fmt::format("ptrun_info{{run_id=\"{}\",host=\"{}\"}} 1\n", label_value(s.run_id),
                       label_value(s.host));
    family(out, "ptrun_uptime_seconds", "gauge", "Seconds since ptrun started.");
    out += fmt::format("ptrun_uptime_seconds {}\n", s.uptime_seconds);
    family(out, "ptrun_workers", "gauge", "This node's workers by state.");
    for (auto state : kWorkerStates) {
        int n = 0;
        for (const auto& w : s.workers) n += w.state == state ? 1 : 0;
        out += fmt::format("ptrun_workers{{state=\"{}\"}} {}\n", state_name(state), n);
    }
    family(out, "ptrun_job_workers", "gauge",
           "Workers by state on every node this endpoint knows (on a multi-node job's store "
           "host: the job).");
    for (auto state : kWorkerStates) {
        int n = 0;
        every_worker(
            s, [&](const std::string&, const WorkerStatus& w) { n += w.state == state ? 1 : 0; });
        out += fmt::format("ptrun_job_workers{{state=\"{}\"}} {}\n", state_name(state), n);
    }
    family(out, "ptrun_world_size", "gauge", "Workers in the whole job.");
    out += fmt::format("ptrun_world_size {}\n", s.world_size);
    family(out, "ptrun_nodes", "gauge", "Nodes in the job's current round.");
    out += fmt::format("ptrun_nodes {}\n", s.nodes);
    family(out, "ptrun_spare_nodes", "gauge",
           "Nodes waiting as spares beyond --nnodes MAX (the store host knows them).");
    out += fmt::format("ptrun_spare_nodes {}\n", s.spares.size());
    family(out, "ptrun_round", "gauge", "The rendezvous round of the current attempt.");
    out += fmt::format("ptrun_round {}\n", s.round);
    family(out, "ptrun_restarts_total", "counter", "Restarts of the worker group in this run.");
    out += fmt::format("ptrun_restarts_total {}\n", s.restart_count);
    family(out, "ptrun_hangs_total", "counter", "Hangs declared in this run.");
    out += fmt::format("ptrun_hangs_total {}\n", s.hangs);
    family(out, "ptrun_healthy", "gauge", "1 while /health answers 200, else 0.");
    out += fmt::format("ptrun_healthy {}\n", health_of(s).ok ? 1 : 0);
    family(out, "ptrun_job_healthy", "gauge",
           "1 while every worker this endpoint knows is healthy (/status's \"healthy\"), else 0.");
    out += fmt::format("ptrun_job_healthy {}\n", job_health_of(s).ok ? 1 : 0);
    family(out, "ptrun_worker_progress_total", "counter",
           "Progress beats of each worker in the current attempt.");
    every_worker(s, [&](const std::string& host, const WorkerStatus& w) {
        out += fmt::format(
            "ptrun_worker_progress_total{{host=\"{}\",rank=\"{}\",local_rank=\"{}\"}} {}\n",
            label_value(host), w.rank, w.local_rank, w.progress_count);
    });
    family(out, "ptrun_worker_seconds_since_progress", "gauge",
           "Seconds since each worker's last progress (absent before its first).");
    every_worker(s, [&](const std::string& host, const WorkerStatus& w) {
        if (!w.seconds_since_progress) return;
        out += fmt::format(
            "ptrun_worker_seconds_since_progress{{host=\"{}\",rank=\"{}\",local_rank=\"{}\"}} "
            "{}\n",
            label_value(host), w.rank, w.local_rank, *w.seconds_since_progress);
    });
    worker_usage_metrics(out, s);
    if (!s.other_nodes.empty()) {
        family(out, "ptrun_node_report_age_seconds", "gauge",
               "Seconds since each other node's status last reached the store host.");
        for (const auto& n : s.other_nodes) {
            out += fmt::format("ptrun_node_report_age_seconds{{host=\"{}\",node_rank=\"{}\"}} {}\n",
                               label_value(n.host), n.node_rank, n.age_seconds);
        }
    }
    if (s.ready_attempt >= 0) {
        family(out, "ptrun_startup_seconds", "gauge",
               "Seconds from the start (or restart) to every rank's first progress, latest ready "
               "attempt.");
        out += fmt::format("ptrun_startup_seconds {}\n", s.ready_seconds);
        family(out, "ptrun_startup_phase_seconds", "gauge",
               "Each start-up phase of the latest ready attempt along its slowest path (they add "
               "up).");
        for (const auto& [name, seconds] : s.startup_phases)
            out += fmt::format("ptrun_startup_phase_seconds{{phase=\"{}\"}} {}\n", name, seconds);
    }
    if (s.store) {
        family(out, "ptrun_store_connections", "gauge",
               "Connections to the store this node hosts.");
        out += fmt::format("ptrun_store_connections {}\n", s.store->connections);
        family(out, "ptrun_store_keys", "gauge", "Keys in the store this node hosts.");
        out += fmt::format("ptrun_store_keys {}\n", s.store->keys);
        family(out, "ptrun_store_bytes", "gauge",
               "Memory the keys, values and queues of the store this node hosts take.");
        out += fmt::format("ptrun_store_bytes {}\n", s.store->stored_bytes);
    }
    return out;
}

}  // namespace ptrun::watchdog
