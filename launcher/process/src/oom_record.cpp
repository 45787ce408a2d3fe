#include "ptrun/launcher/process/oom_record.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace ptrun::launcher {
namespace {

std::optional<std::uint64_t> number(std::string_view text) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    return v;
}

/// The value of `key=` in a comma-separated "k=v,k=v" list, "" when absent.
std::string_view field(std::string_view list, std::string_view key) {
    std::size_t at = 0;
    while (at < list.size()) {
        auto comma = list.find(',', at);
        if (comma == std::string_view::npos) comma = list.size();
        auto item = list.substr(at, comma - at);
        if (item.size() > key.size() && item.substr(0, key.size()) == key &&
            item[key.size()] == '=') {
            return item.substr(key.size() + 1);
        }
        at = comma + 1;
    }
    return {};
}

}  // namespace

std::optional<std::uint64_t> node_oom_kill_count() {
    // Once per attempt: one read() and a search (about 30 us, the kernel's own cost mostly).
    int fd = ::open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char buf[16384];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) return std::nullopt;
    const std::string_view text(buf, static_cast<std::size_t>(n));
    const auto at = text.find("\noom_kill ");
    if (at == std::string_view::npos) return std::nullopt;
    auto rest = text.substr(at + 10);
    return number(rest.substr(0, rest.find('\n')));
}

std::optional<OomKill> parse_oom_record(std::string_view record, pid_t pid,
                                        std::uint64_t since_us) {
    // "PRIO,SEQ,USEC,FLAGS[,...];MESSAGE"
    const auto semi = record.find(';');
    if (semi == std::string_view::npos) return std::nullopt;
    const auto head = record.substr(0, semi);
    auto message = record.substr(semi + 1);
    if (auto nl = message.find('\n'); nl != std::string_view::npos) message = message.substr(0, nl);
    const auto c1 = head.find(',');
    const auto c2 = c1 == std::string_view::npos ? c1 : head.find(',', c1 + 1);
    if (c2 == std::string_view::npos) return std::nullopt;
    auto c3 = head.find(',', c2 + 1);
    if (c3 == std::string_view::npos) c3 = head.size();
    auto usec = number(head.substr(c2 + 1, c3 - c2 - 1));
    if (!usec || *usec < since_us) return std::nullopt;
    const std::string pid_text = std::to_string(pid);
    if (auto at = message.find("oom-kill:"); at != std::string_view::npos) {
        auto list = message.substr(at + 9);
        if (field(list, "pid") != pid_text) return std::nullopt;
        return OomKill{std::string(field(list, "constraint")),
                       std::string(field(list, "oom_memcg"))};
    }
    const std::string killed = "Killed process " + pid_text + " (";
    if (message.find(killed) != std::string_view::npos) return OomKill{};
    return std::nullopt;
}

std::optional<OomKill> find_oom_kill(pid_t pid, std::uint64_t since_us, bool* readable) {
    int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    *readable = fd >= 0;
    if (fd < 0) return std::nullopt;
    std::optional<OomKill> found;
    char buf[8192];  // one record per read; a record is at most about 1 KiB
    for (int records = 0; records < 100'000; ++records) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EPIPE) continue;  // overwritten while read: the next one
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && records == 0) *readable = false;  // EPERM: restricted
        if (n <= 0) break;                                                // EAGAIN: the end
        auto kill =
            parse_oom_record(std::string_view(buf, static_cast<std::size_t>(n)), pid, since_us);
        // The "oom-kill:" line comes first and says more; keep it over a later "Killed process".
        if (kill && (!found || found->constraint.empty())) found = kill;
    }
    ::close(fd);
    return found;
}

std::uint64_t kmsg_now_us() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000ULL;
}

std::optional<std::uint64_t> node_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("MemTotal:", 0) != 0) continue;
        std::istringstream fields(line.substr(9));
        std::uint64_t kib = 0;
        if (fields >> kib) return kib * 1024U;
    }
    return std::nullopt;
}

}  // namespace ptrun::launcher
