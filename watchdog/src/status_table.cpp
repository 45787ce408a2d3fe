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
    t.text += fmt::format("workers      : {} here, {} in the job on {} node(s)\n",
                          doc["workers"].size(), shown(get("world_size")), shown(get("nodes")));
    if (!get("log_dir").is_null()) t.text += "log dir      : " + shown(get("log_dir")) + "\n";
    if (!get("last_failure").is_null())
        t.text += "last failure : " + shown(get("last_failure")) + "\n";
    if (const auto ready = get("ready"); ready.is_object() && ready.contains("line"))
        t.text += "ready        : " + shown(ready["line"]) + "\n";
    t.text += fmt::format("{:<6} {:<6} {:<8} {:<10} {:>9} {:>10}  {}\n", "RANK", "LOCAL", "PID",
                          "STATE", "PROGRESS", "SINCE", "DETAIL");
    for (const auto& w : doc["workers"]) {
        if (!w.is_object()) continue;
        const auto at = [&w](const char* key) { return w.contains(key) ? w[key] : json(); };
        std::string detail = shown(at("detail"));
        if (!at("section").is_null()) {
            detail = "in " + shown(at("section")) + (detail.empty() ? "" : "; " + detail);
        }
        t.text +=
            fmt::format("{:<6} {:<6} {:<8} {:<10} {:>9} {:>10}  {}\n", shown(at("rank")),
                        shown(at("local_rank")), shown(at("pid")), shown(at("state")),
                        shown(at("progress_count")), seconds(at("seconds_since_progress")), detail);
    }
    return t;
}

}  // namespace ptrun::watchdog
