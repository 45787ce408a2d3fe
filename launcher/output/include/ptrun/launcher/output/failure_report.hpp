#pragma once
/// The summary printed when workers fail: enough for a person to act on.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "ptrun/launcher/process/exit_status.hpp"
#include "ptrun/launcher/process/worker_usage.hpp"

namespace ptrun::launcher {

/// One worker's end, as the report shows it.
struct WorkerEnd {
    std::string host;
    int local_rank = 0;
    int rank = 0;
    pid_t pid = 0;
    WorkerExit exit;
    std::chrono::system_clock::time_point time;
    std::string error_file;  ///< path given to the worker; read if it exists
    std::string stderr_log;  ///< path of its stderr log, "" when stderr went to the terminal
    /// The Python runner's PTRUN_ERROR_SUMMARY_FILE: "ExceptionType: message" of an uncaught
    /// exception, whether or not stderr was captured; "" without the runner.
    std::string exception_file;
    /// Its Python stack (faulthandler's dump) when ptrun read one before ending it, else "".
    std::string python_stack;
    bool stopped_by_ptrun = false;  ///< ended by ptrun's SIGTERM/SIGKILL after another failure
    /// Why ptrun ended it, when the watchdog did: "hung: no progress for 31 s (42 beats)", "its
    /// torch file timer 'save' expired"; "" otherwise.
    std::string cause;
    bool hung = false;  ///< judged hung (the job's code is then kExitHung)
    WorkerUsage usage;  ///< what it used, read as it was reaped (an OOM kill says so)
};

/// What the report says besides the workers' ends.
struct ReportContext {
    int restart_count = 0;
    int max_restarts = 0;
    /// False when error files are temporary (removed when ptrun exits): the report then carries
    /// what the file said and names no path that will be gone.
    bool error_files_kept = true;
    std::string interpreter;         ///< Python workers: the interpreter's full path, else ""
    std::string interpreter_origin;  ///< e.g. "PYTHON_EXEC" or "the first python3 on PATH"
};

/// True when torch's @record would have written the missing error file: a Python worker that
/// exited with code 1 (an uncaught exception); not for a signal, sys.exit(N) or a native worker.
bool record_would_help(const WorkerEnd& root, const ReportContext& context);

/// The first line of the message in `end`'s error file (at most 200 characters), "" when it wrote
/// none: what the one-line restart and failure notices quote.
std::string error_file_summary(const WorkerEnd& end);

/// What the worker itself said of its failure, in one line (at most 200 characters): its error
/// file's message, else the runner's summary of its uncaught exception; "" when neither exists.
std::string worker_message(const WorkerEnd& end);

/// The multi-line report: the root cause in full (error file message and traceback, last
/// `tail_lines` of stderr, the interpreter and a hint when a module was missing), then one line
/// per other worker that did not succeed.
std::string format_failure_report(const WorkerEnd& root, const std::vector<WorkerEnd>& others,
                                  const ReportContext& context, std::size_t tail_lines = 10);

/// One line naming a failure: "worker rank 1 (local rank 1, pid 42) failed: exit code 1
/// (ValueError: bad batch)" (`with_host`: "... pid 42) on node2 failed: ..."), the watchdog's
/// cause instead of "failed: ..." when it ended the worker, "was killed by the kernel's OOM
/// killer (peak ...; limit ...)" for an OOM kill, the worker's own message in parentheses when
/// it left one.
std::string failure_line(const WorkerEnd& end, bool with_host = false);

/// The report of a failure that is not the job's root cause: `root_line` (another ptrun's
/// failure_line, agreed through the store) names the first failure, whose own ptrun reports it
/// in full; this worker's failure follows in a few lines.
std::string format_later_failure_report(const WorkerEnd& mine, const std::string& root_line,
                                        const ReportContext& context);

/// The module named by a Python "No module named 'X'" in `text`, "" when there is none.
std::string missing_module(const std::string& text);

/// The last `lines` lines of the file at `path` (at most 64 KiB are read); "" if unreadable.
std::string tail_of_file(const std::string& path, std::size_t lines);

}  // namespace ptrun::launcher
