// GET /logs on the health endpoint: the lines one of this node's ranks wrote to its log files in
// the run directory (log_lines.hpp), for `ptrun logs`, and the long-poll of `ptrun logs --follow`
// (log_follow.hpp); where other hosts reach this endpoint, published in /status.
#include <algorithm>
#include <array>
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
    // The rank names a worker that ran here, never a path: only its own files are read.
    const auto found = rank_log_files.find(q->rank);
    if (found == rank_log_files.end() || found->second.empty()) {
        return {404, "rank " + std::to_string(q->rank) + " does not run on this node\n"};
    }
    const auto& sets = found->second;
    const std::size_t last = sets.size() - 1;
    std::array<std::optional<std::uint64_t>, 2> after{q->out_after, q->err_after};
    if (q->files && *q->files > last) after = {0, 0};  // not this node's numbering: from the start
    std::size_t k =
        q->files ? static_cast<std::size_t>(std::min<std::uint64_t>(*q->files, last)) : last;
    std::array<watchdog::LogChunk, 2> chunks;
    std::size_t bytes = 0;
    try {
        // An older set is complete (its worker is gone): once read to its end, the next one
        // follows from its start, within one answer's bound.
        while (true) {
            bool done = true;
            for (std::size_t s = 0; s < 2; ++s) {
                auto& c = chunks[s];
                c.rank = q->rank;
                c.stream = s == 0 ? watchdog::LogStream::Out : watchdog::LogStream::Err;
                c.files = k;
                const std::string& path = s == 0 ? sets[k].out : sets[k].err;
                c.kept = !path.empty();
                c.next_offset = 0;
                if (!c.kept) continue;
                auto got =
                    watchdog::read_log_chunk(path, q->rank, c.stream, after[s], q->tail, k < last);
                c.next_offset = got.next_offset;
                done = done && got.at_end;
                for (auto& l : got.lines) {
                    bytes += l.text.size();
                    c.lines.push_back(std::move(l));
                }
            }
            if (k == last || !done || bytes >= watchdog::kMaxLogReadBytes) break;
            ++k;
            after = {0, 0};
        }
    } catch (const std::exception& e) {
        return {503, std::string("the log files cannot be read: ") + e.what() + "\n"};
    }
    return {200, watchdog::logs_answer_text({chunks[0], chunks[1]})};
}

void Agent::Impl::note_log_files(const Worker& w, const StreamPlumbing& out,
                                 const StreamPlumbing& err) {
    rank_log_files[w.end.rank].push_back(RankLogFiles{out.log_path, err.log_path});
    for (const auto* stream : {&out, &err}) {
        if (stream->direct) followers.watch(stream->log_path);
    }
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
