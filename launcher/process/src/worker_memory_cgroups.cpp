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
#include <fstream>
#include <sstream>

#include "ptrun/launcher/process/cgroup.hpp"

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

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

/// Writes `text` to the cgroup file `path`, which the kernel made with its cgroup (never
/// created here).
bool write_file(const std::string& path, const std::string& text, std::string* error) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        const int err = errno;
        *error = "cannot write " + text + " to " + path + ": " + std::strerror(err);
        if (fd >= 0) ::close(fd);
        errno = err;  // for the caller to tell EBUSY
        return false;
    }
    ::close(fd);
    return true;
}

bool lists_word(const std::string& text, const std::string& word) {
    std::istringstream in(text);
    for (std::string w; in >> w;) {
        if (w == word) return true;
    }
    return false;
}

std::string no_v2_memory(const std::string& dir) {
    std::string listed = read_text(dir + "/cgroup.controllers");
    while (!listed.empty() && listed.back() == '\n') listed.pop_back();
    return "cgroup v2's memory controller is not enabled for ptrun's cgroup " + dir +
           " (its cgroup.controllers: '" + listed +
           "'; its parent must delegate it, e.g. systemd-run --user --scope -p Delegate=yes)";
}

/// The processes of cgroup `dir` other than this one: v2 gives a cgroup's children a
/// controller only while it holds none (its root excepted).
std::vector<std::string> other_processes(const std::string& dir) {
    std::istringstream in(read_text(dir + "/cgroup.procs"));
    std::vector<std::string> out;
    const std::string self = std::to_string(::getpid());
    for (std::string pid; in >> pid;) {
        if (pid != self) out.push_back(pid);
    }
    return out;
}

}  // namespace

WorkerMemoryPlace worker_memory_place_in(const MemoryCgroup& own) {
    if (own.version != 2) return {own, ""};
    if (!lists_word(read_text(own.dir + "/cgroup.controllers"), "memory"))
        return {std::nullopt, no_v2_memory(own.dir)};
    if (::access((own.dir + "/cgroup.subtree_control").c_str(), W_OK) != 0 ||
        ::access(own.dir.c_str(), W_OK) != 0) {
        return {std::nullopt,
                "ptrun's cgroup " + own.dir +
                    " is not delegated to this user (cgroup.subtree_control not "
                    "writable; systemd-run --user --scope -p Delegate=yes gives one)"};
    }
    if (own.path == "/") return {own, ""};  // the root may hold processes and hand controllers
    if (auto others = other_processes(own.dir); !others.empty()) {
        std::string pids;
        for (std::size_t i = 0; i < others.size() && i < 5; ++i)
            pids += (i ? ", " : "") + others[i];
        if (others.size() > 5) pids += ", ...";
        return {std::nullopt,
                "other processes share ptrun's cgroup " + own.dir + " (pids " + pids +
                    "): cgroup v2 lets a cgroup limit its children only while it holds no process, "
                    "and ptrun moves only itself out; start ptrun in a cgroup of its own "
                    "(systemd-run --user --scope -p Delegate=yes ptrun ..., or an srun task)"};
    }
    return {own, ""};
}

WorkerMemoryPlace worker_memory_place() {
    if (auto own = own_memory_cgroup()) return worker_memory_place_in(*own);
    if (const std::string v2 = own_cgroup_dir(); !v2.empty()) {
        return {std::nullopt, no_v2_memory(v2) + ", and there is no cgroup v1 memory hierarchy"};
    }
    return {std::nullopt,
            "no memory cgroup controller on this machine (neither cgroup v2's memory nor v1's)"};
}

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
    auto place = worker_memory_place();
    if (!place.parent) {
        *error = place.refusal;
        return nullptr;
    }
    return create_in(*place.parent, limit_bytes, error);
}

std::unique_ptr<WorkerMemoryCgroups> WorkerMemoryCgroups::create_in(const MemoryCgroup& own,
                                                                    std::uint64_t limit_bytes,
                                                                    std::string* error) {
    if (auto place = worker_memory_place_in(own); !place.parent) {
        *error = place.refusal;
        return nullptr;
    }
    remove_dead_job_dirs(own.dir);
    std::uint32_t r = 0;
    if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) r = 0;
    char name[48];
    std::snprintf(name, sizeof name, "/ptrun-%d-%08x", static_cast<int>(::getpid()), r);
    MemoryCgroup job{own.path + (own.path == "/" ? name + 1 : name), own.dir + name, own.version};
    if (::mkdir(job.dir.c_str(), 0755) != 0) {
        *error = "cannot create the memory cgroup " + job.dir + ": " + std::strerror(errno);
        if (errno == EACCES || errno == EPERM || errno == EROFS) {
            *error += " (not root, and that cgroup is not delegated to this user)";
        }
        return nullptr;
    }
    std::unique_ptr<WorkerMemoryCgroups> made(new WorkerMemoryCgroups(job, limit_bytes));
    if (own.version != 2) return made;
    // v2: ptrun leaves `own` for a leaf of the job's directory before `own` hands memory down.
    if (own.path != "/") {
        const std::string leaf = job.dir + "/ptrun";
        if (::mkdir(leaf.c_str(), 0755) != 0) {
            *error = "cannot create the cgroup " + leaf + ": " + std::strerror(errno);
            return nullptr;
        }
        if (!write_file(leaf + "/cgroup.procs", "0", error)) {
            *error = "cannot move ptrun into its own leaf cgroup: " + *error;
            ::rmdir(leaf.c_str());
            return nullptr;  // the destructor removes the job's directory
        }
    }
    if (!write_file(own.dir + "/cgroup.subtree_control", "+memory", error)) {
        if (errno == EBUSY) {
            *error += " (a process other than ptrun joined " + own.dir + " meanwhile)";
        }
        std::string ignored;
        write_file(own.dir + "/cgroup.procs", "0", &ignored);  // back where it was
        ::rmdir((job.dir + "/ptrun").c_str());
        return nullptr;
    }
    if (!write_file(job.dir + "/cgroup.subtree_control", "+memory", error)) return nullptr;
    return made;
}

WorkerMemoryCgroups::~WorkerMemoryCgroups() {
    for (const auto& c : kept_) ::rmdir(c.dir.c_str());
    // v2: ptrun's own leaf stays until it exits (nothing may join `own` again once it hands
    // memory down): the next ptrun removes it and the job's directory (remove_dead_job_dirs).
    ::rmdir(job_.dir.c_str());
}

bool WorkerMemoryCgroups::limit_v1(const MemoryCgroup& c, std::string* error) const {
    // memsw (memory plus swap) too where the kernel accounts swap, so the limit is not outrun
    // by swapping; it must be set after memory.limit_in_bytes.
    if (!write_file(c.dir + "/memory.limit_in_bytes", std::to_string(limit_), error)) return false;
    std::string ignored;
    if (::access((c.dir + "/memory.memsw.limit_in_bytes").c_str(), W_OK) == 0) {
        write_file(c.dir + "/memory.memsw.limit_in_bytes", std::to_string(limit_), &ignored);
    }
    return true;
}

bool WorkerMemoryCgroups::limit_v2(const MemoryCgroup& c, std::string* error) const {
    // memory.swap.max 0 where swap is accounted: as v1's memsw, the limit is not outrun by
    // swapping (v2 counts swap apart from memory.max).
    if (!write_file(c.dir + "/memory.max", std::to_string(limit_), error)) return false;
    std::string ignored;
    if (::access((c.dir + "/memory.swap.max").c_str(), W_OK) == 0) {
        write_file(c.dir + "/memory.swap.max", "0", &ignored);
    }
    return true;
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
    if (!(c.version == 2 ? limit_v2(c, error) : limit_v1(c, error))) {
        remove(c);
        return false;
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

void WorkerMemoryCgroups::kill_workers() {
    if (job_.version != 2) return;
    std::string ignored;
    for (const auto& c : kept_) write_file(c.dir + "/cgroup.kill", "1", &ignored);
}

}  // namespace ptrun::launcher
