#include "ptrun/launcher/cgroup.hpp"

#include <fcntl.h>
#include <poll.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <vector>

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_small(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < (1 << 20);) {
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

/// The pids listed in `dir`/cgroup.procs.
std::vector<pid_t> members(const std::string& dir) {
    std::vector<pid_t> out;
    std::istringstream in(read_small(dir + "/cgroup.procs"));
    long pid;
    while (in >> pid) out.push_back(static_cast<pid_t>(pid));
    return out;
}

bool populated(const std::string& events_text) {
    return events_text.find("populated 1") != std::string::npos;
}

/// Waits until `dir`/cgroup.events says "populated 0" (poll wakes on its changes), at most until
/// `deadline`; true when empty.
bool wait_empty(const std::string& dir, Clock::time_point deadline) {
    int fd = ::open((dir + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return members(dir).empty();
    bool empty = false;
    while (true) {
        char buf[256];
        ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
        if (n < 0) break;
        if (!populated(std::string(buf, static_cast<std::size_t>(n)))) {
            empty = true;
            break;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLPRI, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    }
    ::close(fd);
    return empty;
}

void kill_at(const std::string& dir) {
    int fd = ::open((dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        bool ok = ::write(fd, "1", 1) == 1;
        ::close(fd);
        if (ok) return;
    }
    // No cgroup.kill (Linux < 5.14): one by one, a few passes for what forks meanwhile.
    for (int pass = 0; pass < 8; ++pass) {
        auto pids = members(dir);
        if (pids.empty()) return;
        for (pid_t p : pids) ::kill(p, SIGKILL);
    }
}

}  // namespace

std::string own_cgroup_dir() {
    std::string path;
    std::istringstream cg(read_small("/proc/self/cgroup"));
    for (std::string line; std::getline(cg, line);) {
        if (line.rfind("0::", 0) == 0) path = line.substr(3);
    }
    if (path.empty()) return {};
    // Where systemd and most distributions mount it (unified, then hybrid): no mountinfo to parse.
    for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        struct statfs fs {};
        if (::statfs(mount, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
            return std::string(mount) + (path == "/" ? "" : path);
        }
    }
    std::istringstream mi(read_small("/proc/self/mountinfo"));
    for (std::string line; std::getline(mi, line);) {
        // "36 25 0:30 / /sys/fs/cgroup rw,... - cgroup2 cgroup2 rw,..."
        auto dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
        std::istringstream fields(line.substr(0, dash));
        std::string id, parent, devno, root, mount;
        fields >> id >> parent >> devno >> root >> mount;
        if (root != "/" && path.rfind(root, 0) != 0) continue;
        std::string rel = root == "/" ? path : path.substr(root.size());
        std::string dir = mount + (rel == "/" ? "" : rel);
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;
    }
    return {};
}

std::string cgroup_unusable_reason(const std::string& parent) {
    if (parent.empty()) return "no cgroup v2 hierarchy (cgroup2 not mounted, or cgroup v1 only)";
    if (::access(parent.c_str(), W_OK) != 0) {
        return "cannot create a cgroup under " + parent + ": " + std::strerror(errno) +
               " (not root, and that cgroup is not delegated to this user)";
    }
    return {};
}

std::unique_ptr<JobCgroup> JobCgroup::create(const std::string& parent, const std::string& name,
                                             std::string* error) {
    if (parent.empty()) {
        *error = cgroup_unusable_reason(parent);
        return nullptr;
    }
    const std::string path = parent + "/" + name;
    if (::mkdir(path.c_str(), 0755) != 0) {
        *error = "cannot create a cgroup under " + parent + ": " + std::strerror(errno);
        if (errno == EACCES || errno == EPERM || errno == EROFS) {
            *error += " (not root, and that cgroup is not delegated to this user)";
        }
        return nullptr;
    }
    int fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        *error = "cannot open " + path + "/cgroup.procs: " + std::strerror(errno);
        ::rmdir(path.c_str());
        return nullptr;
    }
    auto cgroup = std::unique_ptr<JobCgroup>(new JobCgroup(path, fd));
    cgroup->kill_fd_ = ::open((path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);  // Linux >= 5.14
    cgroup->events_fd_ = ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    return cgroup;
}

JobCgroup::~JobCgroup() {
    kill_all(std::chrono::milliseconds(5'000));
    for (int fd : {procs_fd_, kill_fd_, events_fd_}) {
        if (fd >= 0) ::close(fd);
    }
    remove();
}

void JobCgroup::kill() {
    if (removed_) return;
    if (kill_fd_ < 0 || ::pwrite(kill_fd_, "1", 1, 0) != 1) kill_at(path_);
}

bool JobCgroup::kill_all(std::chrono::milliseconds within) {
    if (removed_) return true;
    const auto deadline = Clock::now() + within;
    char buf[256];
    ssize_t n = events_fd_ >= 0 ? ::pread(events_fd_, buf, sizeof buf, 0) : -1;
    if (n >= 0 && !populated(std::string(buf, static_cast<std::size_t>(n)))) return true;
    kill();
    return wait_empty(path_, deadline);
}

bool JobCgroup::remove() {
    if (removed_) return true;
    removed_ = ::rmdir(path_.c_str()) == 0 || errno == ENOENT;
    return removed_;
}

int destroy_cgroup(const std::string& path, std::chrono::milliseconds within) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    const int count = static_cast<int>(members(path).size());
    kill_at(path);
    if (!wait_empty(path, Clock::now() + within)) return -1;
    ::rmdir(path.c_str());
    return count;
}

}  // namespace ptrun::launcher
