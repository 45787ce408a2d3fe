#pragma once
/// --memory-limit-per-worker: a memory cgroup per worker, limited, so that the OOM killer hits
/// the worker that grew, not whichever process of the job the kernel picks. Made under the
/// memory cgroup ptrun runs in (P), in a directory of the job's (P/ptrun-PID-RANDOM), one child
/// per worker started (w1, w2, ...), which the worker joins before exec.
/// - cgroup v1 (a hybrid machine's memory controller): memory.limit_in_bytes (and
///   memory.memsw.limit_in_bytes where swap is accounted); peak memory.max_usage_in_bytes.
/// - cgroup v2, where P's cgroup.controllers lists memory: memory.max (and memory.swap.max 0
///   where it exists, as v1's memsw keeps swap out); peak memory.peak (Linux >= 5.19, else none),
///   OOM kills memory.events. v2 lets a cgroup hand a controller to its children only while it
///   holds no process itself, so ptrun moves itself into a leaf of the job's directory first
///   (P/ptrun-PID-RANDOM/ptrun), the workers' cgroups its siblings, then enables memory in P's and
///   the job directory's cgroup.subtree_control. P must hold no other process (a shell sharing
///   ptrun's cgroup): that is refused, naming them. ptrun stays in its leaf until it exits; the
///   next ptrun started in P removes the empty directories (remove_dead_job_dirs). A worker in its
///   v2 memory cgroup is outside the job's containment cgroup (a process is in one v2 cgroup only):
///   its cgroup.kill ends it instead (kill_workers), and the subreaper still sweeps its orphans.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/process/memory_cgroup.hpp"

namespace ptrun::launcher {

/// Where the workers' memory cgroups would go, or why they cannot (creating nothing).
struct WorkerMemoryPlace {
    std::optional<MemoryCgroup> parent;  ///< P: the memory cgroup ptrun runs in
    std::string refusal;                 ///< why not, when !parent
};

/// For this process, as it runs now (own_memory_cgroup, own_cgroup_dir): for --explain and create.
WorkerMemoryPlace worker_memory_place();

/// Whether the cgroup `own` (this process's, under any cgroupfs root: a test passes a directory
/// laid out like one) can hold workers' memory cgroups; reads only.
WorkerMemoryPlace worker_memory_place_in(const MemoryCgroup& own);

class WorkerMemoryCgroups {
  public:
    /// Removes what dead ptruns left beside it, then makes the job's directory; null with
    /// `error` saying why it cannot (no memory controller, not delegated, not permitted).
    static std::unique_ptr<WorkerMemoryCgroups> create(std::uint64_t limit_bytes,
                                                       std::string* error);
    /// The same under `parent`, this process's memory cgroup (its dir may be any directory laid
    /// out like cgroupfs). On v2 it moves this process into the job directory's leaf "ptrun".
    static std::unique_ptr<WorkerMemoryCgroups> create_in(const MemoryCgroup& parent,
                                                          std::uint64_t limit_bytes,
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
    /// v2: SIGKILLs everything in the workers' cgroups not removed yet (cgroup.kill, Linux >=
    /// 5.14); v1 has no such file: nothing. Does not wait.
    void kill_workers();
    /// The job's directory, e.g. /sys/fs/cgroup/memory/.../ptrun-42-0a1b2c3d.
    const std::string& dir() const { return job_.dir; }
    /// 1 or 2: the hierarchy's version.
    int version() const { return job_.version; }
    std::uint64_t limit_bytes() const { return limit_; }

  private:
    WorkerMemoryCgroups(MemoryCgroup job, std::uint64_t limit)
        : job_(std::move(job)), limit_(limit) {}
    bool limit_v1(const MemoryCgroup& c, std::string* error) const;
    bool limit_v2(const MemoryCgroup& c, std::string* error) const;

    MemoryCgroup job_;
    std::uint64_t limit_;
    int made_ = 0;
    std::vector<MemoryCgroup> kept_;  ///< worker cgroups not removed yet
};

/// Removes the directories ptrun-PID-* under `parent_dir` whose ptrun (PID) is gone and whose
/// cgroups are empty; how many it removed.
int remove_dead_job_dirs(const std::string& parent_dir);

}  // namespace ptrun::launcher
