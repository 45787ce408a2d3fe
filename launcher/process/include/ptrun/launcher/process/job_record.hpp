#pragma once
/// What a running ptrun has made on this node (its workers' tag, its cgroup, its temporary
/// directory), in a small file it holds locked while it lives, so that a later ptrun can find and
/// clean what a SIGKILLed one left. Records live in a private directory per user: /dev/shm/
/// ptrun-jobs-<uid>, else /tmp/ptrun-jobs-<uid>, or $PTRUN_STATE_DIR (a directory that is not
/// this user's alone is never used), created when missing and removed when empty.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "ptrun/env/env_map.hpp"

namespace ptrun::launcher {

/// Where records live, in order of preference: $PTRUN_STATE_DIR alone when set, else
/// /dev/shm/ptrun-jobs-<uid> and /tmp/ptrun-jobs-<uid>. Pure.
std::vector<std::string> record_dirs(const env::EnvMap& env);

/// The contents of one record.
struct JobRecordData {
    pid_t pid = 0;
    std::string run_id;
    std::string tag;     ///< PTRUN_JOB_TAG of its workers
    std::string cgroup;  ///< its job cgroup, "" for none
    std::vector<std::string> temp_dirs;
};

/// This ptrun's own record: created and locked at start, rewritten on change, removed at exit.
class JobRecord {
  public:
    /// Creates the record in the first usable of `dirs`; null with `error` set when none is.
    static std::unique_ptr<JobRecord> create(JobRecordData data,
                                             const std::vector<std::string>& dirs,
                                             std::string* error);
    /// Removes the record.
    ~JobRecord();
    JobRecord(const JobRecord&) = delete;
    JobRecord& operator=(const JobRecord&) = delete;

    const JobRecordData& data() const { return data_; }
    /// Records the job's cgroup / a temporary directory (rewrites the file).
    void set_cgroup(const std::string& path);
    void add_temp_dir(const std::string& path);
    /// Leaves the record in place, unlocked, for the next ptrun to clean (what it names could not
    /// be removed).
    void keep_for_cleanup() { keep_ = true; }

  private:
    JobRecord(std::string path, int fd, JobRecordData data);
    void write();

    std::string path_;
    int fd_ = -1;
    JobRecordData data_;
    bool keep_ = false;
    std::size_t written_ = 0;  ///< bytes of the record in the file
};

/// A record whose ptrun is gone: its lock could be taken. Removing it (remove()) ends the claim.
struct DeadJob {
    std::string path;
    int fd = -1;  ///< holds the lock, so that two ptruns never clean the same leftovers
    JobRecordData data;
};

/// Records of this user's ptruns on this node that died without removing them. The caller cleans
/// each and then calls forget().
std::vector<DeadJob> find_dead_jobs(const std::vector<std::string>& dirs);

/// Removes a dead job's record and releases it.
void forget(DeadJob& job);

/// Releases a dead job's record and leaves it in place, for a later ptrun to clean again (what
/// it names could not be removed).
void release(DeadJob& job);

/// Text form of a record (one key=value per line; paths may not contain newlines), and back.
std::string encode_record(const JobRecordData& data);
JobRecordData decode_record(const std::string& text);

}  // namespace ptrun::launcher
