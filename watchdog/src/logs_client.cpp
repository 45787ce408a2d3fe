#include "ptrun/watchdog/logs_client.hpp"

#include <algorithm>
#include <charconv>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>

#include "node_logs.hpp"
#include "ptrun/watchdog/log_follow.hpp"
#include "ptrun/watchdog/status_client.hpp"

namespace ptrun::watchdog {
namespace {

using detail::NodeLogs;
using detail::shown;

/// Nodes asked at once (each a thread while it is asked).
constexpr std::size_t kNodesAtOnce = 16;

/// "ADDR:PORT" or "[V6]:PORT" split, PORT from 1; false when it is not one.
bool split_endpoint(const std::string& text, std::string& host, std::uint16_t& port) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) return false;
    std::string h = text.substr(0, colon);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    unsigned value = 0;
    const char* begin = text.data() + colon + 1;
    const char* end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || at != end || value == 0 || value > 65535 || h.empty()) return false;
    host = std::move(h);
    port = static_cast<std::uint16_t>(value);
    return true;
}

/// Runs `fn(i)` for every i below `n`, kNodesAtOnce at a time.
template <typename Fn>
void for_each_node(std::size_t n, Fn fn) {
    for (std::size_t first = 0; first < n; first += kNodesAtOnce) {
        std::vector<std::future<void>> running;
        for (std::size_t i = first; i < std::min(n, first + kNodesAtOnce); ++i) {
            running.push_back(std::async(std::launch::async, fn, i));
        }
        for (auto& r : running) r.get();
    }
}

/// The job's nodes through the asked endpoint, with the ranks of each that were asked for;
/// nodes with none of those are left out.
struct Plan {
    std::vector<NodeLogs> nodes;
    std::vector<std::string> missing;
};

std::optional<Plan> plan_of(const LogsRequest& request, LogsResult& result) {
    const auto status = http_get(request.host, request.port, "/status", request.within);
    if (status.status == 0) {
        result.error = status.error;
        return std::nullopt;
    }
    const auto nodes = status.status == 200 ? job_log_nodes(status.body, request.host, request.port)
                                            : std::nullopt;
    if (!nodes) {
        result.error = "HTTP " + std::to_string(status.status) +
                       ", but not a ptrun /status document (is it a ptrun --health-port?)";
        return std::nullopt;
    }
    result.answered = true;
    Plan plan;
    for (int rank : request.ranks) {
        const bool known = std::any_of(nodes->begin(), nodes->end(), [rank](const auto& n) {
            return std::find(n.ranks.begin(), n.ranks.end(), rank) != n.ranks.end();
        });
        if (!known) {
            plan.missing.push_back("missing: rank " + std::to_string(rank) +
                                   ": no such rank in the job");
        }
    }
    for (const auto& n : *nodes) {
        std::vector<int> ranks;
        for (int r : n.ranks) {
            if (request.ranks.empty() ||
                std::find(request.ranks.begin(), request.ranks.end(), r) != request.ranks.end())
                ranks.push_back(r);
        }
        if (!ranks.empty()) plan.nodes.emplace_back(n, ranks, request.tail, request.within);
    }
    return plan;
}

}  // namespace

std::optional<std::vector<LogsNode>> job_log_nodes(const std::string& json_text,
                                                   const std::string& host, std::uint16_t port) {
    const auto doc = nlohmann::json::parse(json_text, nullptr, false);
    if (!doc.is_object() || !doc.contains("run_id") || !doc.contains("workers") ||
        !doc["workers"].is_array() || !doc.contains("host") || !doc["host"].is_string() ||
        !doc.contains("node_rank") || !doc["node_rank"].is_number_integer()) {
        return std::nullopt;
    }
    std::vector<LogsNode> nodes;
    auto node = [&nodes](std::int64_t node_rank) -> LogsNode& {
        for (auto& n : nodes) {
            if (n.node_rank == node_rank) return n;
        }
        nodes.push_back(LogsNode{static_cast<int>(node_rank), "?", "", "", 0, {}});
        return nodes.back();
    };
    const auto own_rank = doc["node_rank"].get<std::int64_t>();
    if (own_rank < 0 || own_rank > 0x7fffffff) return std::nullopt;
    LogsNode& own = node(own_rank);
    own.host = doc["host"].get<std::string>();
    own.endpoint_host = host;
    own.endpoint_port = port;
    own.endpoint = host.find(':') == std::string::npos ? host + ":" + std::to_string(port)
                                                       : "[" + host + "]:" + std::to_string(port);
    if (doc.contains("node_states") && doc["node_states"].is_array()) {
        for (const auto& s : doc["node_states"]) {
            if (!s.is_object() || !s.contains("node_rank") || !s["node_rank"].is_number_integer())
                return std::nullopt;
            const auto r = s["node_rank"].get<std::int64_t>();
            if (r < 0 || r > 0x7fffffff || r == own_rank) continue;
            LogsNode& n = node(r);
            if (s.contains("host") && s["host"].is_string()) n.host = s["host"].get<std::string>();
            if (s.contains("health_endpoint") && s["health_endpoint"].is_string()) {
                n.endpoint = s["health_endpoint"].get<std::string>();
                if (!split_endpoint(n.endpoint, n.endpoint_host, n.endpoint_port)) {
                    n.endpoint_host.clear();
                }
            }
        }
    }
    for (const auto& w : doc["workers"]) {
        if (!w.is_object() || !w.contains("rank") || !w["rank"].is_number_integer() ||
            !w.contains("node_rank") || !w["node_rank"].is_number_integer()) {
            return std::nullopt;
        }
        const auto rank = w["rank"].get<std::int64_t>();
        const auto node_rank = w["node_rank"].get<std::int64_t>();
        if (rank < 0 || rank > 0x7fffffff || node_rank < 0 || node_rank > 0x7fffffff) {
            return std::nullopt;
        }
        LogsNode& n = node(node_rank);
        if (n.host == "?" && w.contains("host") && w["host"].is_string()) {
            n.host = w["host"].get<std::string>();
        }
        n.ranks.push_back(static_cast<int>(rank));
    }
    for (auto& n : nodes) std::sort(n.ranks.begin(), n.ranks.end());
    std::sort(nodes.begin() + 1, nodes.end(),
              [](const auto& a, const auto& b) { return a.node_rank < b.node_rank; });
    return nodes;
}

namespace {

/// Every node's first read, merged into `result`.
void read_all(Plan& plan, LogsResult& result) {
    std::vector<std::vector<std::vector<SourcedLine>>> per_node(plan.nodes.size());
    for_each_node(plan.nodes.size(), [&](std::size_t i) { plan.nodes[i].read(per_node[i]); });
    std::vector<std::vector<SourcedLine>> sources;
    result.missing = std::move(plan.missing);
    for (std::size_t i = 0; i < per_node.size(); ++i) {
        for (auto& s : per_node[i]) sources.push_back(std::move(s));
        for (auto& m : plan.nodes[i].take_missing()) result.missing.push_back(std::move(m));
    }
    result.text = detail::lines_text(std::move(sources));
}

}  // namespace

LogsResult fetch_logs(const LogsRequest& request) {
    LogsResult result;
    if (auto plan = plan_of(request, result)) read_all(*plan, result);
    return result;
}

LogsResult follow_logs(const LogsRequest& request, const LogsSink& sink) {
    LogsResult result;
    auto plan = plan_of(request, result);
    if (!plan) return result;
    read_all(*plan, result);
    sink.lines(std::exchange(result.text, {}));
    for (auto& m : std::exchange(result.missing, {})) sink.missing(m);
    std::mutex out;
    std::vector<std::optional<int>> codes(plan->nodes.size());
    auto pass_on = [&](NodeLogs& node, std::vector<std::vector<SourcedLine>> sources) {
        auto text = detail::lines_text(std::move(sources));
        const std::lock_guard lock(out);
        if (!text.empty()) sink.lines(text);
        for (auto& m : node.take_missing()) sink.missing(m);
    };
    for_each_node(plan->nodes.size(), [&](std::size_t i) {
        NodeLogs& node = plan->nodes[i];
        while (true) {
            const auto answer = node.wait(kMaxLogWait);
            std::vector<std::vector<SourcedLine>> sources;
            const bool read = node.read(sources);
            const bool more = std::any_of(sources.begin(), sources.end(),
                                          [](const auto& s) { return !s.empty(); });
            pass_on(node, std::move(sources));
            if (!answer || !read) return;
            if (answer->exit_code && !more) {
                codes[i] = answer->exit_code;
                return;
            }
        }
    });
    for (const auto& c : codes) {
        if (c && !result.exit_code) result.exit_code = c;
    }
    return result;
}

}  // namespace ptrun::watchdog
