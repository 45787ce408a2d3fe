#include "ptrun/watchdog/node_status.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ptrun/sys/json_integer.hpp"

namespace ptrun::watchdog {
namespace {

using nlohmann::json;

template <typename T>
T integer(const json& v) {
    return sys::json_integer<T>(v);
}

/// The worker `w` describes; throws when a field is missing or mistyped.
std::optional<WorkerStatus> worker_of(const json& w, double age_seconds) {
    if (!w.is_object()) return std::nullopt;
    WorkerStatus s;
    s.local_rank = integer<int>(w.at("local_rank"));
    s.rank = integer<int>(w.at("rank"));
    s.pid = integer<pid_t>(w.at("pid"));
    const auto state = state_named(w.at("state").get<std::string>());
    if (!state) return std::nullopt;
    s.state = *state;
    s.progress_count = integer<std::uint64_t>(w.at("progress_count"));
    if (const auto& since = w.at("seconds_since_progress"); !since.is_null())
        s.seconds_since_progress = since.get<double>() + age_seconds;
    if (const auto& section = w.at("section"); !section.is_null())
        s.section = section.get<std::string>();
    s.detail = w.at("detail").get<std::string>();
    // What it used: absent from an older ptrun's report.
    if (auto it = w.find("memory_bytes"); it != w.end() && !it->is_null())
        s.memory_bytes = integer<std::uint64_t>(*it);
    if (auto it = w.find("peak_memory_bytes"); it != w.end() && !it->is_null())
        s.peak_memory_bytes = integer<std::uint64_t>(*it);
    if (auto it = w.find("cpu_seconds"); it != w.end() && !it->is_null())
        s.cpu_seconds = it->get<double>();
    if (auto it = w.find("oom_kills"); it != w.end()) s.oom_kills = integer<std::uint64_t>(*it);
    return s;
}

}  // namespace

std::optional<NodeStatus> node_status_of(const std::string& text, double age_seconds) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
    try {
        NodeStatus n;
        n.host = doc.at("host").get<std::string>();
        n.node_rank = integer<int>(doc.at("node_rank"));
        // Absent from a ptrun older than `ptrun logs` across nodes; at most a host name and port.
        if (auto e = doc.find("health_endpoint"); e != doc.end() && e->is_string()) {
            n.health_endpoint = e->get<std::string>();
            if (n.health_endpoint.size() > kMaxEndpointText) return std::nullopt;
        }
        n.phase = doc.at("phase").get<std::string>();
        n.age_seconds = age_seconds;
        if (const auto& failure = doc.at("last_failure"); !failure.is_null())
            n.last_failure = failure.get<std::string>();
        const auto& workers = doc.at("workers");
        if (!workers.is_array() || workers.size() > kMaxNodeWorkers) return std::nullopt;
        for (const auto& w : workers) {
            auto s = worker_of(w, age_seconds);
            if (!s) return std::nullopt;
            n.workers.push_back(std::move(*s));
        }
        return n;
    } catch (const std::exception&) {  // json's, and integer()'s out_of_range
        return std::nullopt;
    }
}

}  // namespace ptrun::watchdog
