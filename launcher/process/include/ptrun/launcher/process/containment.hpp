#pragma once
/// Nothing a job starts outlives it. Containment, from strongest to weakest, all used together:
/// - a cgroup v2 of the job (where ptrun may make one: as root, or under a cgroup delegated to the
///   user), which every worker joins before exec and which cgroup.kill empties in one step:
///   processes that left the worker's process group or session (setsid, double fork) included;
/// - ptrun is a child subreaper: a descendant whose parent died becomes ptrun's child; at the end
///   of an attempt ptrun kills its children, and as each dies the next layer it inherits, and while
///   a later attempt runs it kills, as they come, those left from attempts that are over;
/// - every worker's environment carries PTRUN_JOB_TAG, and a record of what the job made (tag,
///   cgroup, temporary directory) lives in a per-user directory (job_record.hpp), so the next
///   ptrun on the node cleans up after one that was SIGKILLed (which no mechanism above survives).
/// A PID namespace is not used: the workers would see other pids than the rest of the machine
/// (pid-named files in /dev/shm would collide across jobs) and the namespace's init semantics.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/env/env_map.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

class JobCgroup;
class JobRecord;

struct ContainmentOptions {
    std::string run_id;
    bool use_cgroup = true;                ///< false: PTRUN_CGROUP=0
    std::vector<std::string> record_dirs;  ///< job_record.hpp record_dirs()
    /// --memory-limit-per-worker: bytes each worker's own memory cgroup allows (ProcessLauncher).
    std::optional<std::uint64_t> memory_limit_per_worker;
};

/// The options `env` (ptrun's environment) asks for: PTRUN_CGROUP=0 turns the cgroup off,
/// PTRUN_STATE_DIR moves the job records.
ContainmentOptions containment_options(const std::string& run_id, const env::EnvMap& env);

/// Makes this process a child subreaper (process-wide and lasting: main calls it once, before
/// the first Containment, which relies on it for its layer-by-layer sweep). False if refused.
bool become_child_subreaper();

class Containment {
  public:
    /// Cleans what dead ptruns of this user left on this node, creates the job's cgroup where it
    /// may, and records the job. Never throws for an unavailable mechanism (it falls back, and
    /// describe() says what is in use, the subreaper included: see become_child_subreaper).
    Containment(const ContainmentOptions& options, std::shared_ptr<spdlog::logger> log);
    /// Ends everything that is left (cgroup.kill, then ptrun's children layer by layer, at most a
    /// few seconds), removes the cgroup and the record. Blocks.
    ~Containment();
    Containment(const Containment&) = delete;
    Containment& operator=(const Containment&) = delete;

    /// What is in use, e.g. "cgroup v2 /sys/fs/cgroup/.../ptrun-123-ab (cgroup.kill) + subreaper".
    std::string describe() const;
    /// This job's PTRUN_JOB_TAG value for the workers (`inherited` tags first, when a worker of
    /// another job started this ptrun).
    std::string worker_tag(const std::string& inherited) const;
    /// The job's cgroup directory (children are created in it: clone3) and its cgroup.procs (for
    /// a child to join, "0", where clone3 cannot place it: the zygote's workers; opened at the
    /// first call); -1 for none.
    int cgroup_dir_fd() const;
    int cgroup_procs_fd();
    /// Where helpers that live across attempts start (the --preload zygote): a cgroup below the
    /// job's that no attempt's end kills (made on the first call; the attempts then go below
    /// the job's cgroup too). -1 without a cgroup.
    int helper_cgroup_dir_fd();
    /// A worker could not join the cgroup (errno `err`): warns once; later workers do not try.
    void cgroup_join_failed(int err);
    /// Records a temporary directory for the cleanup after a SIGKILL.
    void note_temp_dir(const std::string& path);

    /// A new attempt starts now: processes born before it belong to attempts that are over.
    void attempt_started();
    /// The attempt is over: kills the cgroup's processes and ptrun's children (its workers and
    /// whatever it inherited) but the `helpers` (helper_cgroup_dir_fd). Does not wait for them.
    void attempt_ended(const std::vector<pid_t>& helpers);
    /// Children were reaped: kills the children ptrun has inherited (not among `spared`, the
    /// current attempt's workers and the helpers) that were born before the current attempt, or
    /// all of them between attempts. Their deaths hand their own orphans to ptrun in turn.
    void children_reaped(const std::vector<pid_t>& spared);

  private:
    void clean_dead_jobs(const std::vector<std::string>& record_dirs);

    std::shared_ptr<spdlog::logger> log_;
    std::string tag_;
    std::unique_ptr<JobCgroup> cgroup_;
    bool cgroup_whole_ = true;  ///< every worker is in cgroup_ (false once placing one failed)
    std::string no_cgroup_reason_;
    std::unique_ptr<JobRecord> record_;
    bool subreaper_ = false;  ///< this process is a child subreaper (main made it one)
    bool attempt_running_ = false;
    std::uint64_t attempt_start_ticks_ = 0;
};

/// What containment a ptrun would use here, creating nothing (for --explain).
std::string explain_containment(const env::EnvMap& env);

}  // namespace ptrun::launcher
