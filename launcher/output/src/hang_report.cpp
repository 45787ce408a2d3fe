#include "ptrun/launcher/output/hang_report.hpp"

#include <fmt/format.h>

#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

std::string progress_of(const HangReportRank& r) {
    std::string text = r.seconds_since_progress ? fmt::format("{} beats, the last {:.1f} s ago",
                                                              r.count, *r.seconds_since_progress)
                                                : std::string("never made progress");
    if (r.section) text += ", in section '" + printable(*r.section) + "'";
    return text;
}

}  // namespace

std::string format_hang_report(const HangReport& report) {
    const std::string rule(72, '=');
    std::string out = rule + "\nptrun: hung worker on " + report.host + "\n";
    for (const auto& r : report.ranks) {
        if (r.local_rank != report.first) continue;
        if (report.first_why.empty()) {
            out += fmt::format("  first to stop: rank {} (local rank {}, pid {}): {}\n", r.rank,
                               r.local_rank, r.pid, printable(r.what));
        } else {
            out += fmt::format("  odd one out  : rank {} (local rank {}, pid {}): {}{}\n", r.rank,
                               r.local_rank, r.pid, r.hung ? printable(r.what) + "; " : "",
                               printable(report.first_why));
        }
    }
    for (const auto& r : report.ranks) {
        if (!r.hung || r.local_rank == report.first) continue;
        out += fmt::format("  also hung    : rank {} (local rank {}, pid {}): {}\n", r.rank,
                           r.local_rank, r.pid, printable(r.what));
    }
    if (!report.where.empty()) out += "  where        : " + printable(report.where) + "\n";
    if (!report.first_python_stack.empty()) {
        for (const auto& r : report.ranks) {
            if (r.local_rank == report.first) {
                out += fmt::format("  rank {}'s Python stack:\n", r.rank);
            }
        }
        std::size_t at = 0;
        const std::string text = printable_lines(report.first_python_stack);
        while (at < text.size()) {
            auto end = text.find('\n', at);
            if (end == std::string::npos) end = text.size();
            if (end > at) out += "    " + text.substr(at, end - at) + "\n";
            at = end + 1;
        }
    }
    out += "  progress     :\n";
    for (const auto& r : report.ranks) {
        out += fmt::format("    rank {} (pid {}): {}\n", r.rank, r.pid, progress_of(r));
    }
    if (!report.stacks_dir.empty()) {
        out += "  stacks       : " + printable(report.stacks_dir) + "/stacks_rank_<RANK>.txt\n";
    }
    for (const auto& note : report.notes) out += "  note         : " + printable(note) + "\n";
    if (!report.outcome.empty()) out += "  outcome      : " + printable(report.outcome) + "\n";
    return out + rule + "\n";
}

}  // namespace ptrun::launcher
