#include "ptrun/watchdog/logs_client.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ptrun/watchdog/log_lines.hpp"
#include "ptrun/watchdog/status_client.hpp"

namespace ptrun::watchdog {
namespace {

/// `text` with control characters (tab aside) shown as '?': it came over the network.
std::string shown(std::string text) {
    for (char& c : text) {
        if (((c >= 0 && c < 0x20) && c != '\t') || c == 0x7f) c = '?';
    }
    return text;
}

}  // namespace

std::optional<StatusRanks> status_ranks(const std::string& json_text) {
    const auto doc = nlohmann::json::parse(json_text, nullptr, false);
    if (!doc.is_object() || !doc.contains("run_id") || !doc.contains("workers") ||
        !doc["workers"].is_array() || !doc.contains("host") || !doc["host"].is_string() ||
        !doc.contains("node_rank") || !doc["node_rank"].is_number_integer()) {
        return std::nullopt;
    }
    StatusRanks out;
    out.host = doc["host"].get<std::string>();
    const auto node_rank = doc["node_rank"].get<std::int64_t>();
    for (const auto& w : doc["workers"]) {
        if (!w.is_object() || !w.contains("rank") || !w["rank"].is_number_integer() ||
            !w.contains("node_rank") || !w["node_rank"].is_number_integer()) {
            return std::nullopt;
        }
        const auto rank = w["rank"].get<std::int64_t>();
        if (rank < 0 || rank > 0x7fffffff) return std::nullopt;
        if (w["node_rank"].get<std::int64_t>() == node_rank) {
            out.own.push_back(static_cast<int>(rank));
        } else {
            const bool named = w.contains("host") && w["host"].is_string();
            out.others.emplace_back(named ? w["host"].get<std::string>() : "?",
                                    static_cast<int>(rank));
        }
    }
    std::sort(out.own.begin(), out.own.end());
    return out;
}

LogsResult fetch_logs(const LogsRequest& request) {
    LogsResult result;
    const auto status = http_get(request.host, request.port, "/status", request.within);
    if (status.status == 0) {
        result.error = status.error;
        return result;
    }
    const auto ranks = status.status == 200 ? status_ranks(status.body) : std::nullopt;
    if (!ranks) {
        result.error = "HTTP " + std::to_string(status.status) +
                       ", but not a ptrun /status document (is it a ptrun --health-port?)";
        return result;
    }
    result.answered = true;
    const std::string host = shown(ranks->host);
    std::vector<int> wanted = request.ranks.empty() ? ranks->own : request.ranks;
    std::vector<std::vector<SourcedLine>> sources;
    for (int rank : wanted) {
        if (std::find(ranks->own.begin(), ranks->own.end(), rank) == ranks->own.end()) {
            auto other = std::find_if(ranks->others.begin(), ranks->others.end(),
                                      [rank](const auto& o) { return o.second == rank; });
            result.missing.push_back(
                other == ranks->others.end()
                    ? "rank " + std::to_string(rank) + ": no such rank in the job"
                    : "rank " + std::to_string(rank) + " runs on " + shown(other->first) +
                          ": ask that node's --health-port");
            continue;
        }
        LogsQuery query;
        query.rank = rank;
        if (request.tail > 0) query.tail = request.tail;
        const auto got =
            http_get(request.host, request.port, "/logs?" + logs_query_text(query), request.within);
        const auto chunks = got.status == 200 ? parse_logs_answer(got.body, rank) : std::nullopt;
        const std::string source = host + ":" + std::to_string(rank);
        if (!chunks) {
            result.missing.push_back("rank " + std::to_string(rank) + " on " + host + ": " +
                                     (got.status == 0 ? got.error
                                                      : "HTTP " + std::to_string(got.status) + " " +
                                                            shown(got.body.substr(0, 200))));
            continue;
        }
        bool kept = false;
        for (const auto& c : *chunks) {
            kept = kept || c.kept;
            std::vector<SourcedLine> lines;
            for (const auto& l : c.lines) lines.push_back(SourcedLine{source, l});
            sources.push_back(std::move(lines));
        }
        if (!kept) {
            result.missing.push_back("rank " + std::to_string(rank) + " on " + host +
                                     ": its lines go to no log file (run with --tee 3 or "
                                     "--redirects 3 to keep them)");
        }
    }
    for (const auto& l : merge_by_time(std::move(sources))) {
        std::string text = l.line.text;
        if (!text.empty() && text.back() == '\r') text.pop_back();  // a "\r\n" line end
        result.text += "[" + l.source + "] " + shown(std::move(text)) + "\n";
    }
    return result;
}

}  // namespace ptrun::watchdog
