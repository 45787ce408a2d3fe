#include "ptrun/watchdog/stacks.hpp"

#include <sys/resource.h>

#include <charconv>
#include <csignal>

namespace ptrun::watchdog {
namespace {

/// Splits into lines (no terminators).
std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        out.push_back(line);
        start = end + 1;
    }
    return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

long to_long(std::string_view s) {
    long v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

/// "file:line" or "file:line:col" into frame.file and frame.line.
void set_location(Frame& f, std::string_view loc) {
    loc = trim(loc);
    std::size_t colon = loc.rfind(':');
    // file:line:col: drop the column
    if (colon != std::string_view::npos && colon > 0) {
        const std::size_t before = loc.rfind(':', colon - 1);
        if (before != std::string_view::npos &&
            loc.substr(before + 1, colon - before - 1).find_first_not_of("0123456789") ==
                std::string_view::npos) {
            loc = loc.substr(0, colon);
            colon = before;
        }
    }
    if (colon == std::string_view::npos) {
        f.file = std::string(loc);
        return;
    }
    f.file = std::string(loc.substr(0, colon));
    f.line = static_cast<int>(to_long(loc.substr(colon + 1)));
}

/// "#12 " prefix: true and the rest when `line` is a frame line.
bool frame_line(std::string_view line, std::string_view& rest) {
    line = trim(line);
    if (line.size() < 2 || line[0] != '#' || line[1] < '0' || line[1] > '9') return false;
    std::size_t i = 1;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    rest = trim(line.substr(i));
    return true;
}

}  // namespace

std::vector<ThreadStack> parse_eu_stack(std::string_view text, pid_t pid) {
    std::vector<ThreadStack> out;
    for (std::string_view line : lines_of(text)) {
        std::string_view rest;
        if (starts_with(line, "TID ")) {
            ThreadStack t;
            std::string_view tid = line.substr(4);
            if (!tid.empty() && tid.back() == ':') tid.remove_suffix(1);
            t.name = "TID " + std::string(tid);
            t.main = to_long(tid) == pid;
            out.push_back(std::move(t));
        } else if (frame_line(line, rest) && !out.empty()) {
            // "0x00007f... function - /path/module" (function and module both optional)
            Frame f;
            const std::size_t space = rest.find(' ');
            rest = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space));
            const std::size_t dash = rest.rfind(" - ");
            if (dash != std::string_view::npos) {
                f.module = std::string(trim(rest.substr(dash + 3)));
                rest = rest.substr(0, dash);
            } else if (starts_with(rest, "- ")) {
                f.module = std::string(trim(rest.substr(2)));
                rest = {};
            }
            f.function = std::string(trim(rest));
            out.back().frames.push_back(std::move(f));
        } else if (!out.empty() && !out.back().frames.empty() && starts_with(line, "    ")) {
            set_location(out.back().frames.back(), line);  // -s: the frame's source line
        }
    }
    return out;
}

std::vector<ThreadStack> parse_gdb_backtrace(std::string_view text, pid_t pid) {
    std::vector<ThreadStack> out;
    for (std::string_view line : lines_of(text)) {
        std::string_view rest;
        if (starts_with(line, "Thread ") && line.find("(LWP ") != std::string_view::npos) {
            ThreadStack t;
            const std::size_t lwp = line.find("(LWP ") + 5;
            const std::size_t close = line.find(')', lwp);
            const std::string_view id = line.substr(lwp, close - lwp);
            const std::size_t num_end = line.find(' ', 7);
            t.name = std::string(line.substr(0, num_end)) + " (LWP " + std::string(id) + ")";
            t.main = to_long(id) == pid;
            out.push_back(std::move(t));
        } else if (frame_line(line, rest) && !out.empty()) {
            // "[0x... in ]function (args) [at file:line | from module]"
            Frame f;
            if (starts_with(rest, "0x")) {
                const std::size_t in = rest.find(" in ");
                rest = in == std::string_view::npos ? std::string_view() : rest.substr(in + 4);
            }
            const std::size_t at = rest.rfind(" at ");
            const std::size_t from = rest.rfind(" from ");
            std::string_view head = rest;
            if (at != std::string_view::npos) {
                set_location(f, rest.substr(at + 4));
                head = rest.substr(0, at);
            } else if (from != std::string_view::npos) {
                f.module = std::string(trim(rest.substr(from + 6)));
                head = rest.substr(0, from);
            }
            const std::size_t args = head.find(" (");
            f.function = std::string(trim(head.substr(0, args)));
            if (f.function == "??") f.function.clear();
            out.back().frames.push_back(std::move(f));
        }
    }
    return out;
}

std::vector<ThreadStack> parse_python_faulthandler(std::string_view text) {
    std::vector<ThreadStack> dump;  // the dump being read
    std::vector<ThreadStack> last;  // the last complete one
    bool in_dump = false;
    for (std::string_view line : lines_of(text)) {
        const bool current = starts_with(line, "Current thread ");
        if ((current || starts_with(line, "Thread 0x")) &&
            line.find("(most recent call first):") != std::string_view::npos) {
            if (!in_dump) dump.clear();
            in_dump = true;
            ThreadStack t;
            t.name = std::string(line.substr(0, line.find(" (most recent")));
            t.main = current;
            dump.push_back(std::move(t));
            continue;
        }
        const std::string_view body = trim(line);
        if (in_dump && starts_with(body, "File \"")) {
            // File "path", line N in function
            Frame f;
            const std::size_t close = body.find("\", line ", 6);
            if (close == std::string_view::npos) continue;
            f.file = std::string(body.substr(6, close - 6));
            std::string_view rest = body.substr(close + 8);
            const std::size_t in = rest.find(" in ");
            f.line = static_cast<int>(to_long(rest.substr(0, in)));
            if (in != std::string_view::npos) f.function = std::string(rest.substr(in + 4));
            dump.back().frames.push_back(std::move(f));
            continue;
        }
        if (in_dump &&
            (body.empty() || starts_with(body, "<no Python frame>") || starts_with(body, "..."))) {
            continue;  // blank lines separate threads; "..." marks a truncated stack
        }
        if (in_dump) {  // anything else ends the dump
            in_dump = false;
            last = dump;
        }
    }
    if (in_dump) last = dump;
    return last;
}

bool send_traceback_signal(pid_t pid) noexcept {
    const rlimit none{0, 0};
    ::prlimit(pid, RLIMIT_CORE, &none, nullptr);
    return ::kill(pid, SIGABRT) == 0;
}

}  // namespace ptrun::watchdog
