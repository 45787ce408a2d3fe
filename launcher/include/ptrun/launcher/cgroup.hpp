#pragma once
/// cgroup v2 for containing a job: a cgroup ptrun makes for its workers (under its own cgroup,
/// where it may: as root, or where that cgroup is delegated to the user), which every worker
/// joins before exec, and which cgroup.kill empties in one step, descendants that left the
/// worker's process group or session (setsid, double fork) included.

#include <chrono>
#include <memory>
#include <string>

namespace ptrun::launcher {

/// The cgroup v2 directory this process is in ("" without a cgroup2 mount, e.g. cgroup v1 only).
std::string own_cgroup_dir();

/// Why a cgroup of ptrun's own cannot be made under `parent` ("" when it can: the directory is
/// writable). Does not create anything (for --explain).
std::string cgroup_unusable_reason(const std::string& parent);

class JobCgroup {
public:
    /// Creates the cgroup `name` under `parent` and opens its cgroup.procs; null with `error`
    /// set when that is not permitted or not supported.
    static std::unique_ptr<JobCgroup> create(const std::string& parent, const std::string& name,
                                             std::string* error);
    /// kill_all() (bounded) and remove().
    ~JobCgroup();
    JobCgroup(const JobCgroup&) = delete;
    JobCgroup& operator=(const JobCgroup&) = delete;

    const std::string& path() const { return path_; }
    /// cgroup.procs opened for writing: a child writes "0" to it to join (before exec).
    int procs_fd() const { return procs_fd_; }
    /// SIGKILLs every process in the cgroup (cgroup.kill; one by one where the kernel lacks it).
    void kill();
    /// kill(), then waits until the cgroup is empty, at most `within`; true when empty.
    bool kill_all(std::chrono::milliseconds within);
    /// Removes the cgroup directory (it must be empty); true when gone.
    bool remove();

private:
    JobCgroup(std::string path, int procs_fd) : path_(std::move(path)), procs_fd_(procs_fd) {}

    std::string path_;
    int procs_fd_ = -1;
    int kill_fd_ = -1;    ///< cgroup.kill, kept open: one write per attempt end
    int events_fd_ = -1;  ///< cgroup.events ("populated 0|1"), kept open
    bool removed_ = false;
};

/// Kills everything in the cgroup at `path` (a dead ptrun's leftover), waits at most `within`,
/// and removes it; the number of processes it held, or -1 when it could not be emptied.
int destroy_cgroup(const std::string& path, std::chrono::milliseconds within);

}  // namespace ptrun::launcher
