#include "ptrun/launcher/output/failure_report.hpp"

#include <cstdio>
#include <fstream>

#include "ptrun/launcher/output/error_file.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/output/usage_table.hpp"
#include "ptrun/launcher/output/utc_fields.hpp"

namespace ptrun::launcher {
namespace {

std::string utc(std::chrono::system_clock::time_point time) {
    const auto t = utc_fields(time);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u UTC", t.year, t.month, t.day,
                  t.hour, t.minute, t.second);
    return buf;
}

std::string indent(const std::string& text, const std::string& pad) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto nl = text.find('\n', start);
        auto end = nl == std::string::npos ? text.size() : nl;
        out += pad + printable(std::string_view(text).substr(start, end - start)) + "\n";
        start = end + 1;
    }
    return out;
}

void field(std::string& out, const char* name, const std::string& value) {
    out += "  ";
    out += name;
    out.append(12 - std::string(name).size(), ' ');
    out += ": " + printable(value) + "\n";
}

}  // namespace

std::string tail_of_file(const std::string& path, std::size_t lines) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return "";
    auto size = static_cast<std::streamoff>(in.tellg());
    std::streamoff start = size > 65536 ? size - 65536 : 0;
    in.seekg(start);
    std::string data(static_cast<std::size_t>(size - start), '\0');
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    while (!data.empty() && data.back() == '\n') data.pop_back();
    std::size_t pos = data.size();
    for (std::size_t n = 0; n < lines && pos != std::string::npos && pos > 0; ++n) {
        pos = data.rfind('\n', pos - 1);
    }
    return pos == std::string::npos || pos == 0 ? data : data.substr(pos + 1);
}

std::string missing_module(const std::string& text) {
    const std::string needle = "No module named '";
    auto at = text.rfind(needle);
    if (at == std::string::npos) return "";
    auto start = at + needle.size();
    auto end = text.find('\'', start);
    return end == std::string::npos ? "" : text.substr(start, end - start);
}

bool record_would_help(const WorkerEnd& root, const ReportContext& context) {
    // @record writes the file for an exception that leaves the entry point, after which Python
    // exits with code 1. A signal death, sys.exit(N) or a native worker writes none however
    // decorated.
    return !context.interpreter.empty() && root.exit.signal == 0 && root.exit.code == 1;
}

std::string error_file_summary(const WorkerEnd& end) {
    auto report = read_error_file(end.error_file);
    if (!report || report->message.empty()) return "";
    std::string line = report->message.substr(0, report->message.find('\n'));
    constexpr std::size_t kMax = 200;
    if (line.size() > kMax) line = line.substr(0, kMax) + "...";
    return line;
}

std::string worker_message(const WorkerEnd& end) {
    if (auto said = error_file_summary(end); !said.empty()) return said;
    if (end.exception_file.empty()) return "";
    auto summary = tail_of_file(end.exception_file, 1);
    summary = summary.substr(0, summary.find('\n'));
    return summary.size() > 200 ? summary.substr(0, 200) + "..." : summary;
}

std::string format_failure_report(const WorkerEnd& root, const std::vector<WorkerEnd>& others,
                                  const ReportContext& context, std::size_t tail_lines) {
    const std::string rule(72, '=');
    std::string out = rule + "\nptrun: worker group failed";
    out += " (restarts used: " + std::to_string(context.restart_count) + " of " +
           std::to_string(context.max_restarts) + ")\n";
    out += std::string(72, '-') + "\nRoot cause (first failure):\n";
    field(out, "host", root.host);
    field(out, "rank",
          std::to_string(root.rank) + " (local rank " + std::to_string(root.local_rank) + ")");
    field(out, "pid", std::to_string(root.pid));
    field(out, "exit", exit_text(root.exit, root.usage));
    if (!root.cause.empty()) field(out, "cause", root.cause);
    field(out, "time", utc(root.time));
    if (!context.interpreter.empty()) {
        field(out, "interpreter", context.interpreter + " (" + context.interpreter_origin + ")");
    }
    std::string seen;  // what the worker said, to look for a missing module in
    if (auto report = read_error_file(root.error_file)) {
        field(out, "error file",
              context.error_files_kept
                  ? root.error_file
                  : "(temporary, removed when ptrun exits; --log-dir keeps it)");
        field(out, "message", report->message);
        if (!report->traceback.empty())
            out += "  traceback   :\n" + indent(report->traceback, "    ");
        seen = report->message + "\n" + report->traceback;
    } else if (record_would_help(root, context)) {
        field(out, "error file",
              "<none written> (decorate the entry point with torch's @record to get one)");
    } else {
        field(out, "error file", "<none written>");
    }
    if (!root.python_stack.empty()) {
        out += "  python stack: where it was when ptrun ended it\n" +
               indent(root.python_stack, "    ");
    }
    if (!root.stderr_log.empty()) {
        auto tail = tail_of_file(root.stderr_log, tail_lines);
        out += "  stderr      : last lines of " + printable(root.stderr_log) +
               (tail.empty() ? " (empty)\n" : "\n");
        out += indent(tail, "    | ");
        seen += "\n" + tail;
    } else {
        out +=
            "  stderr      : went to the terminal above (use --redirects 2 or --tee 2 to keep "
            "it)\n";
    }
    if (!root.exception_file.empty()) {
        if (auto summary = tail_of_file(root.exception_file, 1); !summary.empty()) {
            summary = summary.substr(0, summary.find('\n'));
            field(out, "exception", summary.substr(0, 200));
            seen += "\n" + summary;
        }
    }
    if (auto module = missing_module(seen); !module.empty() && !context.interpreter.empty()) {
        field(out, "hint",
              context.interpreter + " cannot import '" + module +
                  "': set PYTHON_EXEC to an interpreter that has it");
    }
    bool header = false;
    for (const auto& w : others) {
        if (w.exit.succeeded()) continue;
        if (!header) out += "Other workers:\n";
        header = true;
        out += "  rank " + std::to_string(w.rank) + " (local rank " + std::to_string(w.local_rank) +
               ", pid " + std::to_string(w.pid) + "): " + exit_text(w.exit, w.usage) +
               (w.stopped_by_ptrun ? ", stopped by ptrun" : "") + "\n";
    }
    return out + rule + "\n";
}

std::string failure_line(const WorkerEnd& end, bool with_host) {
    std::string line = "worker rank " + std::to_string(end.rank) + " (local rank " +
                       std::to_string(end.local_rank) + ", pid " + std::to_string(end.pid) + ") " +
                       (with_host ? "on " + end.host + " " : "") +
                       (!end.cause.empty()     ? end.cause
                        : end.usage.oom_killed ? "was " + oom_text(end.usage)
                                               : "failed: " + exit_text(end.exit, end.usage));
    if (auto said = worker_message(end); !said.empty()) line += " (" + printable(said) + ")";
    return line;
}

std::string format_later_failure_report(const WorkerEnd& mine, const std::string& root_line,
                                        const ReportContext& context) {
    const std::string rule(72, '=');
    std::string out = rule + "\nptrun: worker group failed";
    out += " (restarts used: " + std::to_string(context.restart_count) + " of " +
           std::to_string(context.max_restarts) + ")\n";
    field(out, "root cause", root_line + " (the first failure; its ptrun reports it)");
    field(out, "then here", failure_line(mine, true));
    if (!mine.stderr_log.empty()) field(out, "stderr", mine.stderr_log);
    return out + rule + "\n";
}

}  // namespace ptrun::launcher
