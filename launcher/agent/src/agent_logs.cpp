// GET /logs on the health endpoint: the lines one of this node's ranks wrote to its log files in
// the run directory (log_lines.hpp), for `ptrun logs`.
#include <exception>

#include "agent_impl.hpp"
#include "ptrun/watchdog/log_lines.hpp"

namespace ptrun::launcher {

std::pair<int, std::string> Agent::Impl::answer_logs(const std::string& query) {
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

}  // namespace ptrun::launcher
