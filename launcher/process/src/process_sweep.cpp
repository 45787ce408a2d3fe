#include "ptrun/launcher/process/process_sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;

/// Reads a small /proc file whole ("" when it cannot be read).
std::string slurp(const std::string& path, std::size_t limit = 1 << 20) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string out;
    char buf[4096];
    while (out.size() < limit) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

/// The fields of /proc/PID/stat after the command name: [0] = state, [1] = ppid, ... (views into
/// `text`, which must outlive them)
std::vector<std::string_view> stat_fields(const std::string& text) {
    std::vector<std::string_view> out;
    auto close = text.rfind(')');
    if (close == std::string::npos) return out;
    std::string_view rest(text);
    rest.remove_prefix(close + 1);
    while (!rest.empty()) {
        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
        auto end = rest.find(' ');
        out.push_back(rest.substr(0, end));
        if (end == std::string_view::npos) break;
        rest.remove_prefix(end);
    }
    return out;
}

template <typename Fn>
void for_each_pid(Fn&& fn) {
    DIR* dir = ::opendir("/proc");
    if (!dir) return;
    while (auto* e = ::readdir(dir)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) continue;
        fn(static_cast<pid_t>(pid));
    }
    ::closedir(dir);
}

void append_pids(const std::string& text, std::vector<pid_t>& out) {
    const char* p = text.c_str();
    char* end = nullptr;
    for (long v = std::strtol(p, &end, 10); end != p; v = std::strtol(p, &end, 10)) {
        out.push_back(static_cast<pid_t>(v));
        p = end;
    }
}

/// Waits until one of `pids` (SIGKILLed children) can be reaped, at most until `deadline`.
void wait_some(const std::vector<pid_t>& pids, Clock::time_point deadline) {
    std::vector<pollfd> fds;
    for (pid_t p : pids) {
        int fd = static_cast<int>(::syscall(SYS_pidfd_open, p, 0));
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!fds.empty() && left.count() > 0) {
        ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    }
    for (auto& f : fds) ::close(f.fd);
}

}  // namespace

std::vector<pid_t> own_children() {
    std::vector<pid_t> out;
    bool have_children_files = false;
    if (DIR* tasks = ::opendir("/proc/self/task")) {
        while (auto* e = ::readdir(tasks)) {
            if (e->d_name[0] == '.') continue;
            const std::string path = std::string("/proc/self/task/") + e->d_name + "/children";
            int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;  // no CONFIG_PROC_CHILDREN, or the thread is gone
            have_children_files = true;
            char buf[4096];
            std::string text;
            for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
                text.append(buf, static_cast<std::size_t>(n));
            ::close(fd);
            append_pids(text, out);
        }
        ::closedir(tasks);
    }
    if (have_children_files) return out;
    const std::string self = std::to_string(::getpid());
    for_each_pid([&](pid_t pid) {
        const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
        auto fields = stat_fields(stat);  // views into `stat`
        if (fields.size() > 1 && fields[1] == self) out.push_back(pid);
    });
    return out;
}

std::uint64_t start_ticks(pid_t pid) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    auto fields = stat_fields(stat);  // views into `stat`
    // After the name: state(0) ppid(1) ... starttime is field 22 of stat, i.e. index 19 here.
    if (fields.size() <= 19) return 0;
    return std::strtoull(std::string(fields[19]).c_str(), nullptr, 10);
}

int kill_descendants(std::chrono::milliseconds within) {
    const auto deadline = Clock::now() + within;
    int killed = 0;
    while (true) {
        // Reap what has already died (its children have been handed to ptrun by now).
        int status;
        while (::waitpid(-1, &status, WNOHANG) > 0) {
        }
        auto kids = own_children();
        if (kids.empty() || Clock::now() >= deadline) break;
        for (pid_t k : kids) {
            if (::kill(k, SIGKILL) == 0) ++killed;
        }
        wait_some(kids, deadline);
    }
    return killed;
}

std::vector<pid_t> tagged_processes(const std::string& tag) {
    std::vector<pid_t> out;
    if (tag.empty()) return out;
    const pid_t self = ::getpid();
    const uid_t uid = ::getuid();
    const std::string prefix = std::string(kJobTagVariable) + "=";
    for_each_pid([&](pid_t pid) {
        if (pid == self) return;
        const std::string base = "/proc/" + std::to_string(pid);
        struct stat st {};
        if (::stat(base.c_str(), &st) != 0 || (uid != 0 && st.st_uid != uid)) return;
        const std::string env = slurp(base + "/environ");
        for (std::size_t at = 0; at < env.size();) {
            auto end = env.find('\0', at);
            if (end == std::string::npos) end = env.size();
            std::string_view var(env.data() + at, end - at);
            if (var.substr(0, prefix.size()) == prefix) {
                var.remove_prefix(prefix.size());
                while (!var.empty()) {
                    auto colon = var.find(':');
                    if (var.substr(0, colon) == tag) {
                        out.push_back(pid);
                        return;
                    }
                    if (colon == std::string_view::npos) break;
                    var.remove_prefix(colon + 1);
                }
                return;
            }
            at = end + 1;
        }
    });
    return out;
}

}  // namespace ptrun::launcher
