#include "ptrun/launcher/output/usage_table.hpp"

#include <algorithm>
#include <csignal>

#include "ptrun/launcher/output/one_decimal.hpp"

namespace ptrun::launcher {
namespace {

std::string one_decimal(double v) {
    std::string s = one_decimal_text(v);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    return s;
}

std::string seconds_cell(double s) {
    return s < 100 ? one_decimal(s) + " s" : std::to_string(static_cast<long long>(s + 0.5)) + " s";
}

std::string pad(std::string s, std::size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
}

}  // namespace

std::string bytes_text(std::uint64_t bytes) {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    int unit = 0;
    while (v >= 1024 && unit < 5) {
        v /= 1024;
        ++unit;
    }
    if (unit == 0) return std::to_string(bytes) + " B";
    return (v >= 100 ? std::to_string(static_cast<long long>(v + 0.5)) : one_decimal(v)) + " " +
           kUnits[unit];
}

std::string limit_text(const MemoryLimit& limit) {
    return (limit.bytes ? bytes_text(*limit.bytes) + ", " : std::string()) + limit.whose;
}

std::string oom_text(const WorkerUsage& u) {
    if (!u.oom_killed) return "";
    std::string inner;
    if (u.peak_bytes) inner = "peak " + bytes_text(*u.peak_bytes);
    if (u.limit) {
        if (!inner.empty()) inner += "; ";
        inner += "limit " + limit_text(*u.limit);
    }
    return "killed by the kernel's OOM killer" + (inner.empty() ? "" : " (" + inner + ")");
}

std::string exit_text(const WorkerExit& exit, const WorkerUsage& u) {
    if (u.oom_killed) {
        return "signal " + std::to_string(exit.signal) + " (" + signal_name(exit.signal) +
               "): " + oom_text(u) + ", exit code " + std::to_string(exit.shell_code());
    }
    if (exit.signal == SIGKILL && u.node_oom_kills_meanwhile > 0) {
        return "signal 9 (SIGKILL); the kernel's OOM killer killed " +
               std::to_string(u.node_oom_kills_meanwhile) +
               " process(es) on this node while it ran, likely this one (the kernel's log, "
               "/dev/kmsg, is not readable here to say)";
    }
    return describe(exit);
}

std::string ended_cell(const WorkerExit& exit, const WorkerUsage& u, bool stopped_by_ptrun) {
    std::string text = u.oom_killed  ? "OOM-killed (SIGKILL)"
                       : exit.signal ? signal_name(exit.signal)
                                     : "exit code " + std::to_string(exit.code);
    return stopped_by_ptrun ? text + ", stopped by ptrun" : text;
}

std::string format_usage_table(const std::string& host, const std::vector<RankUse>& ranks) {
    struct Row {
        int first = 0, last = 0;
        std::vector<std::string> cells;  // wall, cpu, peak, restarts, ended
    };
    std::vector<Row> rows;
    bool any_cgroup = false, any_rss = false;
    for (const auto& r : ranks) {
        std::vector<std::string> cells{
            seconds_cell(r.wall.count()),
            r.cpu_seconds ? seconds_cell(*r.cpu_seconds) : "-",
            r.peak_bytes ? bytes_text(*r.peak_bytes) : "-",
            std::to_string(r.restarts),
            r.ended,
        };
        if (r.peak_bytes) (r.peak_from_cgroup ? any_cgroup : any_rss) = true;
        if (!rows.empty() && rows.back().cells == cells && rows.back().last + 1 == r.rank) {
            rows.back().last = r.rank;
            continue;
        }
        rows.push_back({r.rank, r.rank, std::move(cells)});
    }
    std::vector<std::string> heads{"ranks", "wall", "cpu", "peak memory", "restarts", "ended"};
    std::vector<std::vector<std::string>> lines{heads};
    for (const auto& row : rows) {
        std::vector<std::string> line{row.first == row.last ? std::to_string(row.first)
                                                            : std::to_string(row.first) + "-" +
                                                                  std::to_string(row.last)};
        line.insert(line.end(), row.cells.begin(), row.cells.end());
        lines.push_back(std::move(line));
    }
    std::vector<std::size_t> width(heads.size(), 0);
    for (const auto& line : lines) {
        for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
    }
    std::string out = "what each worker used on " + host + ":\n";
    for (const auto& line : lines) {
        std::string text;
        for (std::size_t i = 0; i < line.size(); ++i) {
            text += "  " + (i + 1 == line.size() ? line[i] : pad(line[i], width[i]));
        }
        out += text + "\n";
    }
    out += "  (cpu: user + system, with the descendants it waited for; peak: ";
    if (any_cgroup && any_rss) {
        out += "its memory cgroup's peak where it had one, else the largest resident set";
    } else if (any_cgroup) {
        out += "its memory cgroup's peak, descendants included";
    } else {
        // Linux carries the hiwater of the mm a vfork-style child exec's from (ptrun's) into
        // its ru_maxrss: a floor the reader should know of.
        out +=
            "the largest resident set of the worker or a descendant it waited for, never below "
            "ptrun's own when it started the worker";
    }
    return out + ")\n";
}

}  // namespace ptrun::launcher
