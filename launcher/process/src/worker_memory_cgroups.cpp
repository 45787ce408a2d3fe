#include "ptrun/launcher/process/worker_memory_cgroups.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace ptrun::launcher {
namespace {

std::vector<std::string> subdirs(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (auto* e = ::readdir(d)) {
            if (e->d_type == DT_DIR && e->d_name[0] != '.') out.emplace_back(e->d_name);
        }
        ::closedir(d);
    }
    return out;
}

bool write_file(const std::string& path, const std::string& text, std::string* error) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        *error = "cannot write " + text + " to " + path + ": " + std::strerror(errno);
        if (fd >= 0) ::close(fd);
        return false;
    }
    ::close(fd);
    return true;
}

}  // namespace

int remove_dead_job_dirs(const std::string& parent_dir) {
    int removed = 0;
    for (const auto& name : subdirs(parent_dir)) {
        int pid = 0;
        if (std::sscanf(name.c_str(), "ptrun-%d-", &pid) != 1 || pid <= 0) continue;
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its ptrun still runs
        const std::string dir = parent_dir + "/" + name;
        for (const auto& w : subdirs(dir)) ::rmdir((dir + "/" + w).c_str());
        if (::rmdir(dir.c_str()) == 0) ++removed;
    }
    return removed;
}

std::unique_ptr<WorkerMemoryCgroups> WorkerMemoryCgroups::create(std::uint64_t limit_bytes,
                                                                 std::string* error) {
    auto own = own_memory_cgroup();
    if (!own) {
        *error =
            "no memory cgroup controller on this machine (neither cgroup v2's memory nor v1's)";
        return nullptr;
    }
    if (own->version != 1) {
        *error = "the memory controller is on cgroup v2 (" + own->dir +
                 "), where ptrun does not make per-worker memory cgroups yet; on cgroup v2, "
                 "limit the whole job instead (systemd-run -p MemoryMax=..., SLURM --mem)";
        return nullptr;
    }
    remove_dead_job_dirs(own->dir);
    std::uint32_t r = 0;
    if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) r = 0;
    char name[48];
    std::snprintf(name, sizeof name, "/ptrun-%d-%08x", static_cast<int>(::getpid()), r);
    MemoryCgroup job{own->path + (own->path == "/" ? name + 1 : name), own->dir + name, 1};
    if (::mkdir(job.dir.c_str(), 0755) != 0) {
        *error = "cannot create the memory cgroup " + job.dir + ": " + std::strerror(errno);
        if (errno == EACCES || errno == EPERM || errno == EROFS) {
            *error += " (not root, and that cgroup is not delegated to this user)";
        }
        return nullptr;
    }
    return std::unique_ptr<WorkerMemoryCgroups>(new WorkerMemoryCgroups(job, limit_bytes));
}

WorkerMemoryCgroups::~WorkerMemoryCgroups() {
    for (const auto& c : kept_) ::rmdir(c.dir.c_str());
    ::rmdir(job_.dir.c_str());
}

bool WorkerMemoryCgroups::add(MemoryCgroup* out, int* procs_fd, std::string* error) {
    const std::string name = "/w" + std::to_string(made_ + 1);
    MemoryCgroup c{job_.path + name, job_.dir + name, job_.version};
    if (::mkdir(c.dir.c_str(), 0755) != 0) {
        *error = "cannot create the memory cgroup " + c.dir + ": " + std::strerror(errno);
        return false;
    }
    made_ += 1;
    kept_.push_back(c);
    // memsw (memory plus swap) too where the kernel accounts swap, so the limit is not outrun
    // by swapping; it must be set after memory.limit_in_bytes.
    if (!write_file(c.dir + "/memory.limit_in_bytes", std::to_string(limit_), error)) {
        remove(c);
        return false;
    }
    std::string ignored;
    if (::access((c.dir + "/memory.memsw.limit_in_bytes").c_str(), W_OK) == 0) {
        write_file(c.dir + "/memory.memsw.limit_in_bytes", std::to_string(limit_), &ignored);
    }
    *procs_fd = ::open((c.dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (*procs_fd < 0) {
        *error = "cannot open " + c.dir + "/cgroup.procs: " + std::strerror(errno);
        remove(c);
        return false;
    }
    *out = c;
    return true;
}

bool WorkerMemoryCgroups::remove(const MemoryCgroup& cgroup) {
    if (::rmdir(cgroup.dir.c_str()) != 0 && errno != ENOENT) return false;
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        if (it->dir == cgroup.dir) {
            kept_.erase(it);
            break;
        }
    }
    return true;
}

}  // namespace ptrun::launcher
