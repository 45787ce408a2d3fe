#pragma once
/// --memory-limit-per-worker: a memory cgroup per worker, limited, so that the OOM killer hits
/// the worker that grew, not whichever process of the job the kernel picks. Made under the
/// memory cgroup ptrun runs in, in a directory of the job's (ptrun-PID-RANDOM), one child per
/// worker started (w1, w2, ...), which the worker joins before exec. On a hybrid machine (memory
/// controller on cgroup v1) this is memory.limit_in_bytes; a pure cgroup v2 machine is refused
/// for now (the job's cgroup would need the controller delegated below ptrun's own cgroup).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptrun/launcher/process/memory_cgroup.hpp"

namespace ptrun::launcher {

class WorkerMemoryCgroups {
  public:
    /// Removes what dead ptruns left beside it, then makes the job's directory; null with
    /// `error` saying why it cannot (no memory controller, v2 only, not permitted).
    static std::unique_ptr<WorkerMemoryCgroups> create(std::uint64_t limit_bytes,
                                                       std::string* error);
    /// Removes every worker's cgroup and the job's directory (their processes must be gone).
    ~WorkerMemoryCgroups();
    WorkerMemoryCgroups(const WorkerMemoryCgroups&) = delete;
    WorkerMemoryCgroups& operator=(const WorkerMemoryCgroups&) = delete;

    /// A fresh cgroup for the next worker, limited; `procs_fd` gets its cgroup.procs opened for
    /// writing (the caller closes it). False with `error` set when it cannot be made.
    bool add(MemoryCgroup* out, int* procs_fd, std::string* error);
    /// Removes one worker's cgroup once it is empty; false (kept for the destructor) when busy.
    bool remove(const MemoryCgroup& cgroup);
    /// The job's directory, e.g. /sys/fs/cgroup/memory/.../ptrun-42-0a1b2c3d.
    const std::string& dir() const { return job_.dir; }
    std::uint64_t limit_bytes() const { return limit_; }

  private:
    WorkerMemoryCgroups(MemoryCgroup job, std::uint64_t limit)
        : job_(std::move(job)), limit_(limit) {}

    MemoryCgroup job_;
    std::uint64_t limit_;
    int made_ = 0;
    std::vector<MemoryCgroup> kept_;  ///< worker cgroups not removed yet
};

/// Removes the directories ptrun-PID-* under `parent_dir` whose ptrun (PID) is gone and whose
/// cgroups are empty; how many it removed.
int remove_dead_job_dirs(const std::string& parent_dir);

}  // namespace ptrun::launcher
