// GET /logs on the health endpoint: the lines one of this node's ranks wrote to its log files in
// the run directory (log_lines.hpp), for `ptrun logs`, and the long-poll of `ptrun logs --follow`
// (log_follow.hpp); where other hosts reach this endpoint, published in /status.
#include <exception>

#include "agent_impl.hpp"
#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/watchdog/log_follow.hpp"
#include "ptrun/watchdog/log_lines.hpp"

namespace ptrun::launcher {

void Agent::Impl::answer_logs(const std::string& query, watchdog::HealthServer::StacksReply reply) {
    if (!watchdog::is_logs_wait_query(query)) {
        auto [status, text] = answer_rank_logs(query);
        return reply(status, std::move(text));
    }
    std::string error;
    const auto q = watchdog::parse_logs_wait_query(query, &error);
    if (!q) return reply(400, "bad /logs query: " + error + "\n");
    followers.wait(*q, std::move(reply));
}

std::pair<int, std::string> Agent::Impl::answer_rank_logs(const std::string& query) {
    std::string error;
    const auto q = watchdog::parse_logs_query(query, &error);
    if (!q) return {400, "bad /logs query: " + error + "\n"};
    // The rank names a worker of this attempt, never a path: only its own files are read.
    const Worker* worker = nullptr;
    for (const auto& w : workers) {
        if (w.end.rank == q->rank) worker = &w;
    }
    if (worker == nullptr) {
        return {404, "rank " + std::to_string(q->rank) + " does not run on this node\n"};
    }
    std::vector<watchdog::LogChunk> chunks;
    try {
        for (auto stream : {StdMask::Out, StdMask::Err}) {
            const auto which =
                stream == StdMask::Out ? watchdog::LogStream::Out : watchdog::LogStream::Err;
            if (!route_of(stream, worker->slot).to_file) {
                chunks.push_back(watchdog::LogChunk{q->rank, which, false, 0, {}});
                continue;
            }
            const std::string path = logs.log_dir(worker->slot) +
                                     (stream == StdMask::Out ? "/stdout.log" : "/stderr.log");
            chunks.push_back(watchdog::read_log_chunk(
                path, q->rank, which, stream == StdMask::Out ? q->out_after : q->err_after,
                q->tail));
        }
    } catch (const std::exception& e) {
        return {503, std::string("the log files cannot be read: ") + e.what() + "\n"};
    }
    return {200, watchdog::logs_answer_text(chunks)};
}

// Bound to one address: that address. Bound to every address (0.0.0.0, ::): the one the
// rendezvous knows this node by (the route toward the store host, or --local-addr), else the
// host name. A loopback address is published as it is: `ptrun logs` says it is unreachable
// from another host when it does not answer.
std::string Agent::Impl::published_health_endpoint() const {
    if (!watch || !watch->health) return "";
    const std::string& bound = config.health_addr;
    const bool any = bound.empty() || bound == "0.0.0.0" || bound == "::" || bound == "[::]";
    const std::string host = !any ? bound : !self_addr.empty() ? self_addr : config.hostname;
    return format_endpoint(host, watch->health->port());
}

void Agent::Impl::stop_loop() {
    if (!followers.followed()) return io.stop();
    auto linger = std::make_shared<boost::asio::steady_timer>(io, watchdog::kFollowerLinger);
    linger->async_wait([this, linger](boost::system::error_code) { io.stop(); });
}

}  // namespace ptrun::launcher
