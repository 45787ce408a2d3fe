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

/// The path of the job cgroup `name` under `parent` (what JobCgroup::create makes, and what the
/// job record names before it exists).
std::string job_cgroup_path(const std::string& parent, const std::string& name);

/// Why a cgroup of ptrun's own cannot be made under `parent` ("" when it can: the directory is
/// writable). Does not create anything (for --explain).
std::string cgroup_unusable_reason(const std::string& parent);

/// The job's cgroup J. Workers of the first attempt go into J itself; after an attempt was killed,
/// the next one goes into a fresh child (J/attempt-N): Linux (seen on 6.18) SIGKILLs a child that
/// clone3 creates in a cgroup once cgroup.kill was used on it (CLONE_INTO_CGROUP compares the
/// kill sequence of the parent's cgroup with the target's). Killing J ends every attempt at once.
class JobCgroup {
  public:
    /// Creates the cgroup `name` under `parent` and opens what the workers need; null with
    /// `error` set when that is not permitted or not supported.
    static std::unique_ptr<JobCgroup> create(const std::string& parent, const std::string& name,
                                             std::string* error);
    /// kill_all() (bounded) and remove().
    ~JobCgroup();
    JobCgroup(const JobCgroup&) = delete;
    JobCgroup& operator=(const JobCgroup&) = delete;

    /// J, the job's cgroup.
    const std::string& path() const { return path_; }
    /// Where the current attempt's workers go: its directory, for clone3's CLONE_INTO_CGROUP (a
    /// child created inside it).
    int dir_fd() const { return target_.dir_fd; }
    /// Its cgroup.procs, for a child to join by writing "0" (the --preload zygote's workers),
    /// opened at the first call (each cgroup file opened costs ~0.1 ms here: a launch opens only
    /// what it uses); -1 when it cannot be opened.
    int procs_fd();
    /// SIGKILLs every process of the current attempt (cgroup.kill; one by one where the kernel
    /// lacks it), nothing when the cgroup is already empty. Does not wait.
    void kill_attempt();
    /// Before an attempt's workers start: after kill_attempt(), moves the target to a fresh child
    /// cgroup of J. False with `error` set when it cannot be made.
    bool prepare_attempt(std::string* error);
    /// J/helpers, where helpers that live across attempts go (made on the first call; from
    /// then on no attempt uses J itself, whose cgroup.kill would end them): its directory's fd,
    /// or -1 with `error` set.
    int helper_dir_fd(std::string* error);
    /// Kills everything in J and below, then waits until it is empty, at most `within`; true
    /// when empty.
    bool kill_all(std::chrono::milliseconds within);
    /// Removes J and every cgroup below it (attempts, helpers, and any a worker made), leaves
    /// first (they must be empty); true when gone.
    bool remove();

  private:
    /// One cgroup workers are placed in: its directory open, its files once used.
    struct Target {
        std::string path;
        int dir_fd = -1;
        int procs_fd = -1;  ///< cgroup.procs once procs_fd() opened it
        int kill_fd = -1;   ///< cgroup.kill once a kill opened it (Linux >= 5.14)
        bool killed = false;
    };
    explicit JobCgroup(std::string path) : path_(std::move(path)) {}
    static bool open_target(const std::string& path, Target& t, std::string* error);
    /// True when J's cgroup.events (open since create) says nothing is in J or below it; false
    /// when populated or unknown.
    bool known_empty() const;
    static void close_target(Target& t);
    /// Moves the target to a fresh J/attempt-N.
    bool move_target(std::string* error);

    std::string path_;
    int events_fd_ = -1;  ///< J's cgroup.events ("populated 0|1", recursive), kept open
    Target target_;
    int attempts_ = 0;  ///< attempt cgroups made below J
    Target helpers_;    ///< J/helpers, once helper_dir_fd() made it
    bool removed_ = false;
};

/// Kills everything in the cgroup at `path` (a dead ptrun's leftover), waits at most `within`,
/// and removes it and every cgroup below it; the number of processes it held, or -1 when it is
/// still there (it could not be emptied, or not removed).
int destroy_cgroup(const std::string& path, std::chrono::milliseconds within);

}  // namespace ptrun::launcher
