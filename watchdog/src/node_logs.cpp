#include "node_logs.hpp"

#include <utility>

#include "ptrun/watchdog/status_client.hpp"

namespace ptrun::watchdog::detail {

std::string shown(std::string text) {
    for (char& c : text) {
        if (((c >= 0 && c < 0x20) && c != '\t') || c == 0x7f) c = '?';
    }
    return text;
}

std::string lines_text(std::vector<std::vector<SourcedLine>> sources) {
    std::string out;
    for (const auto& l : merge_by_time(std::move(sources))) {
        std::string text = l.line.text;
        if (!text.empty() && text.back() == '\r') text.pop_back();  // a "\r\n" line end
        out += "[" + l.source + "] " + shown(std::move(text)) + "\n";
    }
    return out;
}

std::string NodeLogs::name() const {
    return "node " + std::to_string(node_.node_rank) + " (" +
           (node_.endpoint.empty() ? shown(node_.host) : shown(node_.endpoint)) + ")";
}

std::vector<std::string> NodeLogs::take_missing() { return std::exchange(missing_, {}); }

void NodeLogs::lost(const std::string& why) {
    gone_ = true;
    std::string hint;
    const std::string& h = node_.endpoint_host;
    if (node_.node_rank != 0 && (h.rfind("127.", 0) == 0 || h == "::1" || h == "localhost")) {
        hint =
            " (it serves on a loopback address: from another host, start its ptrun with "
            "--health-addr 0.0.0.0)";
    }
    missing_.push_back(name() + " did not answer: " + shown(why) + hint);
}

bool NodeLogs::read(std::vector<std::vector<SourcedLine>>& sources) {
    if (gone_) return false;
    if (node_.endpoint_host.empty()) {
        gone_ = true;
        missing_.push_back("node " + std::to_string(node_.node_rank) + " (" + shown(node_.host) +
                           ") published no health endpoint (run its ptrun with --health-port)");
        return false;
    }
    const std::string host = shown(node_.host);
    for (int rank : ranks_) {
        LogsQuery query;
        query.rank = rank;
        if (tail_ > 0) query.tail = tail_;
        const auto at = next_.find(rank);
        if (at != next_.end()) {
            query.out_after = at->second.out;
            query.err_after = at->second.err;
            query.files = at->second.files;
        }
        const auto got = http_get(node_.endpoint_host, node_.endpoint_port,
                                  "/logs?" + logs_query_text(query), within_);
        if (got.status == 0) {
            lost(got.error);
            return false;
        }
        const auto chunks = got.status == 200 ? parse_logs_answer(got.body, rank) : std::nullopt;
        if (!chunks) {
            missing_.push_back("missing: rank " + std::to_string(rank) + " on " + host + ": HTTP " +
                               std::to_string(got.status) + " " + shown(got.body.substr(0, 200)));
            continue;
        }
        const bool first = at == next_.end();
        Offsets& next = next_[rank];
        bool kept = false;
        const std::string source = host + ":" + std::to_string(rank);
        for (const auto& c : *chunks) {
            kept = kept || c.kept;
            (c.stream == LogStream::Out ? next.out : next.err) = c.next_offset;
            next.files = c.files;
            std::vector<SourcedLine> lines;
            for (const auto& l : c.lines) lines.push_back(SourcedLine{source, l});
            sources.push_back(std::move(lines));
        }
        if (!kept && first) {
            missing_.push_back("missing: rank " + std::to_string(rank) + " on " + host +
                               ": its lines go to no log file (run with --tee 3 or "
                               "--redirects 3 to keep them)");
        }
    }
    return true;
}

std::optional<LogsWaitAnswer> NodeLogs::wait(std::chrono::milliseconds wait) {
    if (gone_) return std::nullopt;
    const auto got =
        http_get(node_.endpoint_host, node_.endpoint_port,
                 "/logs?" + logs_wait_query_text(LogsWaitQuery{seen_, wait}), within_ + wait);
    if (got.status == 0) {
        lost(got.error);
        return std::nullopt;
    }
    const auto answer = got.status == 200 ? parse_logs_wait_answer(got.body) : std::nullopt;
    if (!answer) {
        gone_ = true;
        missing_.push_back(name() + " cannot be followed: HTTP " + std::to_string(got.status) +
                           " " + shown(got.body.substr(0, 200)));
        return std::nullopt;
    }
    seen_ = answer->count;
    return answer;
}

}  // namespace ptrun::watchdog::detail
