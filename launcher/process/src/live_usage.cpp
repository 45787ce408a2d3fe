#include "ptrun/launcher/process/live_usage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher {
namespace {

/// A /proc file's first 4 KiB ("" when unreadable): statm, stat and status are smaller.
std::string read_small(const std::string& path) {
    sys::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return "";
    std::string text(4096, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
        // These files are made whole at the first read (single_open): a short read is all of
        // it, and a second read() would cost a system call for nothing.
        if (got < text.size()) break;
    }
    text.resize(got);
    return text;
}

/// The number at the start of `text` after spaces and tabs; nullopt without one. `text` moves on.
std::optional<std::uint64_t> next_number(std::string_view& text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return v;
}

}  // namespace

std::optional<std::uint64_t> statm_resident_pages(std::string_view statm) {
    if (!next_number(statm)) return std::nullopt;  // size
    return next_number(statm);
}

std::optional<std::uint64_t> status_kib(std::string_view status, std::string_view key) {
    std::size_t at = 0;
    while (at < status.size()) {
        const auto eol = status.find('\n', at);
        std::string_view line = status.substr(at, eol == std::string_view::npos ? eol : eol - at);
        if (line.size() > key.size() && line.substr(0, key.size()) == key &&
            line[key.size()] == ':') {
            line.remove_prefix(key.size() + 1);
            return next_number(line);
        }
        if (eol == std::string_view::npos) break;
        at = eol + 1;
    }
    return std::nullopt;
}

std::optional<std::uint64_t> stat_cpu_ticks(std::string_view stat) {
    const auto paren = stat.rfind(')');
    if (paren == std::string_view::npos) return std::nullopt;
    std::string_view rest = stat.substr(paren + 1);
    // Fields from 3 (state) on: utime is field 14, stime 15, cutime 16, cstime 17.
    for (int field = 3; field < 14; ++field) {
        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
        const auto space = rest.find(' ');
        if (space == std::string_view::npos) return std::nullopt;
        rest.remove_prefix(space);
    }
    std::uint64_t ticks = 0;
    for (int field = 14; field <= 17; ++field) {
        auto v = next_number(rest);
        if (!v) return std::nullopt;
        ticks += *v;
    }
    return ticks;
}

std::optional<std::uint64_t> read_resident_bytes(pid_t pid, const std::string& proc_root) {
    const long page = ::sysconf(_SC_PAGESIZE);
    auto pages = statm_resident_pages(read_small(proc_root + "/" + std::to_string(pid) + "/statm"));
    if (!pages || page <= 0) return std::nullopt;
    return *pages * static_cast<std::uint64_t>(page);
}

LiveUsage read_process_usage(pid_t pid, const std::string& proc_root) {
    LiveUsage u;
    const std::string dir = proc_root + "/" + std::to_string(pid);
    const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
    u.memory_bytes = read_resident_bytes(pid, proc_root);
    if (auto hwm = status_kib(read_small(dir + "/status"), "VmHWM")) u.peak_bytes = *hwm * 1024U;
    if (auto ticks = stat_cpu_ticks(read_small(dir + "/stat")); ticks && ticks_per_second > 0)
        u.cpu_seconds = static_cast<double>(*ticks) / static_cast<double>(ticks_per_second);
    return u;
}

LiveUsage with_cgroup_usage(LiveUsage usage, const MemoryCgroup& cgroup) {
    if (auto now = memory_current(cgroup)) usage.memory_bytes = now;
    if (auto peak = memory_peak(cgroup)) usage.peak_bytes = peak;
    usage.oom_kills = static_cast<int>(memory_oom_kills(cgroup));
    return usage;
}

}  // namespace ptrun::launcher
