#pragma once
/// Stacks as data, parsed from the three texts ptrun can get: eu-stack's and gdb's native
/// backtraces (stack_tool.hpp) and the tracebacks Python's faulthandler prints.
///
/// Python tracebacks: with PYTHONFAULTHANDLER=1 in a Python worker's environment, a fatal signal
/// (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL) makes the interpreter print every thread's stack to
/// its stderr before it dies, even while a thread is blocked inside C code holding the GIL (the
/// handler is C, not Python). SIGTERM and SIGKILL print nothing; faulthandler.register(signum)
/// would, but only if the worker's own code asked for it. So ptrun ends a hung Python worker with
/// SIGABRT (send_traceback_signal() below, which first turns its core dumps off). The text goes
/// to the worker's stderr: when that is a log file or a pipe ptrun tees (--redirects / --tee),
/// ptrun reads it back and parse_python_faulthandler() finds the last dump; when the worker
/// inherits a terminal, the dump appears there and ptrun cannot quote it (the report says so).

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace ptrun::watchdog {

struct Frame {
    std::string function;  ///< as printed (C++ demangled); empty when unknown
    std::string file;      ///< source file, when known
    int line = 0;          ///< 0 when unknown
    std::string module;    ///< native: the shared object or executable, when known
    bool operator==(const Frame&) const = default;
};

struct ThreadStack {
    std::string name;           ///< "TID 4242", "Thread 1 (LWP 4242)", "Thread 0x7f..."
    bool main = false;          ///< the process's main thread (Python: the current thread)
    std::vector<Frame> frames;  ///< innermost first
    bool operator==(const ThreadStack&) const = default;
};

/// eu-stack -p PID [-m] [-s] output; the thread whose TID is `pid` is the main one.
std::vector<ThreadStack> parse_eu_stack(std::string_view text, pid_t pid);
/// gdb -batch "thread apply all bt" output; the thread whose LWP is `pid` is the main one.
std::vector<ThreadStack> parse_gdb_backtrace(std::string_view text, pid_t pid);
/// The last faulthandler dump in `text` (a worker's stderr, other output around it allowed);
/// "Current thread" is the main one. Empty when there is none.
std::vector<ThreadStack> parse_python_faulthandler(std::string_view text);

/// Turns `pid`'s core dumps off (RLIMIT_CORE 0) and sends it SIGABRT, so that a Python worker
/// run with PYTHONFAULTHANDLER=1 prints every thread's traceback and dies without writing a core
/// of its whole memory. False when the signal could not be sent.
bool send_traceback_signal(pid_t pid) noexcept;

}  // namespace ptrun::watchdog
