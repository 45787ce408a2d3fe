#include "ptrun/launcher/output/checkpoint_report.hpp"

#include "ptrun/launcher/output/duration_text.hpp"

namespace ptrun::launcher {
namespace {

/// "rank 0 (exit code 0), rank 2 (exit code 0)".
std::string rank_list(const std::vector<const WorkerEnd*>& ends) {
    std::string text;
    for (const auto* end : ends) {
        if (!text.empty()) text += ", ";
        text += "rank " + std::to_string(end->rank) + " (" + describe(end->exit) + ")";
    }
    return text;
}

}  // namespace

std::string format_checkpoint_report(const std::vector<WorkerEnd>& ends, int checkpoint_signal,
                                     std::chrono::milliseconds grace) {
    std::vector<const WorkerEnd*> in_time;
    std::vector<const WorkerEnd*> stopped;
    for (const auto& end : ends) (end.stopped_by_ptrun ? stopped : in_time).push_back(&end);
    std::string text = "checkpoint signal " + signal_name(checkpoint_signal) + ": ";
    const std::string within = "within the grace (" + seconds_text(grace) + ", --checkpoint-grace)";
    if (in_time.empty()) {
        text += "no rank exited " + within;
    } else {
        text += "exited " + within + ": " + rank_list(in_time);
    }
    if (!stopped.empty()) text += "; stopped by ptrun: " + rank_list(stopped);
    return text;
}

}  // namespace ptrun::launcher
