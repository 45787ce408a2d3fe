#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ptrun/watchdog/status_client.hpp"

namespace ptrun::watchdog {
namespace {

using nlohmann::json;

/// Text from the document, its control characters shown as '?' (it came over the network).
std::string shown(const json& value) {
    std::string text;
    if (value.is_string()) {
        text = value.get<std::string>();
    } else if (value.is_null()) {
        text = "-";
    } else {
        text = value.dump();
    }
    for (char& c : text) {
        if ((c >= 0 && c < 0x20) || c == 0x7f) c = '?';
    }
    return text;
}

std::string seconds(const json& value) {
    if (!value.is_number()) return "-";
    return fmt::format("{:.1f} s", value.get<double>());
}

/// True when `doc` has what a ptrun /status document has (its own keys, typed).
bool is_status(const json& doc) {
    return doc.is_object() && doc.contains("run_id") && doc.contains("healthy") &&
           doc["healthy"].is_boolean() && doc.contains("workers") && doc["workers"].is_array();
}

}  // namespace

std::optional<StatusTable> status_table(const std::string& text) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !is_status(doc)) return std::nullopt;
    StatusTable t;
    t.healthy = doc["healthy"].get<bool>();
    const auto get = [&doc](const char* key) { return doc.contains(key) ? doc[key] : json(); };
    t.text += fmt::format("job          : {} on {} (phase {}, round {}, restarts {}, up {})\n",
                          shown(get("run_id")), shown(get("host")), shown(get("phase")),
                          shown(get("round")), shown(get("restart_count")),
                          seconds(get("uptime_seconds")));
    t.text +=
        fmt::format("health       : {}\n", t.healthy ? "ok" : "UNHEALTHY: " + shown(get("reason")));
    // This node's workers: the first node state's count (documents without one: every row).
    const json nodes = get("node_states");
    const bool with_nodes =
        nodes.is_array() && !nodes.empty() && nodes[0].is_object() && nodes[0].contains("workers");
    t.text += fmt::format("workers      : {} here, {} in the job on {} node(s)\n",
                          with_nodes ? shown(nodes[0]["workers"]) : shown(doc["workers"].size()),
                          shown(get("world_size")), shown(get("nodes")));
    if (const json spares = get("spares"); spares.is_array() && !spares.empty()) {
        std::string hosts;
        for (const auto& h : spares) hosts += (hosts.empty() ? "" : ", ") + shown(h);
        t.text += fmt::format("spares       : {} waiting: {}\n", spares.size(), hosts);
    }
    if (!get("log_dir").is_null()) t.text += "log dir      : " + shown(get("log_dir")) + "\n";
    if (!get("last_failure").is_null())
        t.text += "last failure : " + shown(get("last_failure")) + "\n";
    if (const auto ready = get("ready"); ready.is_object() && ready.contains("line"))
        t.text += "ready        : " + shown(ready["line"]) + "\n";
    // A job of several nodes (the store host's view): a row per node, and each rank's host.
    const bool several = with_nodes && nodes.size() > 1;
    if (several) {
        t.text += fmt::format("{:<5} {:<20} {:<10} {:>7} {:>8}  {}\n", "NODE", "HOST", "PHASE",
                              "WORKERS", "AGE", "HEALTH");
        for (const auto& n : nodes) {
            if (!n.is_object()) continue;
            const auto at = [&n](const char* key) { return n.contains(key) ? n[key] : json(); };
            const bool ok = at("healthy").is_boolean() && at("healthy").get<bool>();
            t.text += fmt::format("{:<5} {:<20} {:<10} {:>7} {:>8}  {}\n", shown(at("node_rank")),
                                  shown(at("host")), shown(at("phase")), shown(at("workers")),
                                  seconds(at("age_seconds")), ok ? "ok" : shown(at("reason")));
        }
    }
    const std::string host_head = several ? fmt::format("{:<20} ", "HOST") : "";
    t.text += fmt::format("{}{:<6} {:<6} {:<8} {:<10} {:>9} {:>10}  {}\n", host_head, "RANK",
                          "LOCAL", "PID", "STATE", "PROGRESS", "SINCE", "DETAIL");
    for (const auto& w : doc["workers"]) {
        if (!w.is_object()) continue;
        const auto at = [&w](const char* key) { return w.contains(key) ? w[key] : json(); };
        std::string detail = shown(at("detail"));
        if (!at("section").is_null()) {
            detail = "in " + shown(at("section")) + (detail.empty() ? "" : "; " + detail);
        }
        const std::string host = several ? fmt::format("{:<20} ", shown(at("host"))) : "";
        t.text +=
            fmt::format("{}{:<6} {:<6} {:<8} {:<10} {:>9} {:>10}  {}\n", host, shown(at("rank")),
                        shown(at("local_rank")), shown(at("pid")), shown(at("state")),
                        shown(at("progress_count")), seconds(at("seconds_since_progress")), detail);
    }
    return t;
}

}  // namespace ptrun::watchdog
