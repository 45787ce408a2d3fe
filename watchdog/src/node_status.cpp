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
