#include "ptrun/launcher/process/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <string_view>
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

/// `dir` and every directory below it, parents before their children.
std::vector<std::string> cgroup_tree(const std::string& dir) {
    std::vector<std::string> out{dir};
    for (std::size_t i = 0; i < out.size() && out.size() < 4096; ++i) {
        DIR* d = ::opendir(out[i].c_str());
        if (!d) continue;
        while (auto* e = ::readdir(d)) {
            if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(out[i] + "/" + e->d_name);
        }
        ::closedir(d);
    }
    return out;
}

/// Removes the cgroups of `tree` (cgroup_tree's: parents first) leaves first; true when its
/// root is gone.
bool remove_cgroups(const std::vector<std::string>& tree) {
    for (auto dir = tree.rbegin(); dir != tree.rend(); ++dir) ::rmdir(dir->c_str());
    struct stat st {};
    return ::stat(tree.front().c_str(), &st) != 0;
}

void kill_at(const std::string& dir) {
    int fd = ::open((dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        bool ok = ::write(fd, "1", 1) == 1;
        ::close(fd);
        if (ok) return;
    }
    // No cgroup.kill (Linux < 5.14): one by one, a few passes for what forks meanwhile, in the
    // cgroup and every cgroup below it.
    const auto dirs = cgroup_tree(dir);
    for (int pass = 0; pass < 8; ++pass) {
        bool any = false;
        for (const auto& d : dirs) {
            for (pid_t p : members(d)) {
                ::kill(p, SIGKILL);
                any = true;
            }
        }
        if (!any) return;
    }
}

}  // namespace

std::string own_cgroup_dir() {
    std::string path;
    const std::string cgroups = read_small("/proc/self/cgroup");
    for (std::size_t at = 0; at < cgroups.size();) {
        const auto end = std::min(cgroups.find('\n', at), cgroups.size());
        const std::string_view line(cgroups.data() + at, end - at);
        if (line.substr(0, 3) == "0::") path = std::string(line.substr(3));
        at = end + 1;
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

std::string job_cgroup_path(const std::string& parent, const std::string& name) {
    return parent + "/" + name;
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
    const std::string path = job_cgroup_path(parent, name);
    if (::mkdir(path.c_str(), 0755) != 0) {
        *error = "cannot create a cgroup under " + parent + ": " + std::strerror(errno);
        if (errno == EACCES || errno == EPERM || errno == EROFS) {
            *error += " (not root, and that cgroup is not delegated to this user)";
        }
        return nullptr;
    }
    auto cgroup = std::unique_ptr<JobCgroup>(new JobCgroup(path));
    if (!open_target(path, cgroup->target_, error)) {
        ::rmdir(path.c_str());
        cgroup->removed_ = true;
        return nullptr;
    }
    cgroup->events_fd_ = ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    return cgroup;
}

bool JobCgroup::open_target(const std::string& path, Target& t, std::string* error) {
    t.path = path;
    t.dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t.dir_fd < 0) {
        *error = "cannot open cgroup " + path + ": " + std::strerror(errno);
        return false;
    }
    t.killed = false;
    return true;
}

int JobCgroup::procs_fd() {
    if (target_.procs_fd < 0 && target_.dir_fd >= 0) {
        target_.procs_fd = ::openat(target_.dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    }
    return target_.procs_fd;
}

void JobCgroup::close_target(Target& t) {
    for (int fd : {t.dir_fd, t.procs_fd, t.kill_fd}) {
        if (fd >= 0) ::close(fd);
    }
    t.dir_fd = t.procs_fd = t.kill_fd = -1;
}

JobCgroup::~JobCgroup() {
    kill_all(std::chrono::milliseconds(5'000));
    close_target(target_);
    if (events_fd_ >= 0) ::close(events_fd_);
    remove();
}

void JobCgroup::kill_attempt() {
    if (removed_) return;
    // The attempt's cgroup is J and nothing is left in it: nothing to kill, and the next
    // attempt may use J again.
    if (target_.path == path_ && known_empty()) return;
    if (target_.kill_fd < 0 && target_.dir_fd >= 0) {
        target_.kill_fd = ::openat(target_.dir_fd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
    }
    if (target_.kill_fd < 0 || ::pwrite(target_.kill_fd, "1", 1, 0) != 1) kill_at(target_.path);
    target_.killed = true;
}

bool JobCgroup::prepare_attempt(std::string* error) {
    if (!target_.killed) return true;
    return move_target(error);
}

int JobCgroup::helper_dir_fd(std::string* error) {
    if (helpers_.dir_fd >= 0) return helpers_.dir_fd;
    const std::string path = path_ + "/helpers";
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        *error = "cannot create cgroup " + path + ": " + std::strerror(errno);
        return -1;
    }
    if (!open_target(path, helpers_, error)) return -1;
    if (target_.path == path_ && !move_target(error)) return -1;
    return helpers_.dir_fd;
}

bool JobCgroup::move_target(std::string* error) {
    const std::string path = path_ + "/attempt-" + std::to_string(attempts_ + 1);
    if (::mkdir(path.c_str(), 0755) != 0) {
        *error = "cannot create cgroup " + path + ": " + std::strerror(errno);
        return false;
    }
    attempts_ += 1;
    Target next;
    if (!open_target(path, next, error)) return false;
    Target old = target_;
    target_ = next;
    close_target(old);
    if (old.path != path_) ::rmdir(old.path.c_str());  // removed now if already empty, else at exit
    return true;
}

bool JobCgroup::known_empty() const {
    if (events_fd_ < 0) return false;
    char buf[256];
    const ssize_t n = ::pread(events_fd_, buf, sizeof buf, 0);
    return n >= 0 && !populated(std::string(buf, static_cast<std::size_t>(n)));
}

bool JobCgroup::kill_all(std::chrono::milliseconds within) {
    if (removed_) return true;
    const auto deadline = Clock::now() + within;
    if (known_empty()) return true;
    kill_at(path_);  // J and every attempt cgroup below it
    return wait_empty(path_, deadline);
}

bool JobCgroup::remove() {
    if (removed_) return true;
    for (int a = 1; a <= attempts_; ++a) ::rmdir((path_ + "/attempt-" + std::to_string(a)).c_str());
    close_target(helpers_);
    // Only one made: an rmdir of a name a cgroup lacks costs 20-30 us here (3x removing one).
    if (!helpers_.path.empty()) ::rmdir(helpers_.path.c_str());
    removed_ = ::rmdir(path_.c_str()) == 0 || errno == ENOENT;
    if (removed_ || errno != EBUSY) return removed_;
    // A worker made cgroups below its own: the whole tree, leaves first (as destroy_cgroup).
    removed_ = remove_cgroups(cgroup_tree(path_));
    return removed_;
}

int destroy_cgroup(const std::string& path, std::chrono::milliseconds within) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;  // never made, or removed meanwhile
    // The attempt and helper cgroups, and any a worker made below its own.
    const auto tree = cgroup_tree(path);
    int count = 0;
    for (const auto& dir : tree) count += static_cast<int>(members(dir).size());
    kill_at(path);
    if (!wait_empty(path, Clock::now() + within)) return -1;
    return remove_cgroups(tree) ? count : -1;
}

}  // namespace ptrun::launcher
