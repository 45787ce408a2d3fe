#pragma once
/// Where per-worker files go. Every run gets a directory of its own, so a reused --log-dir or
/// run id (a SLURM requeue) never overwrites, mixes or misreports an earlier run's files:
///
///   <root>/<run-id>_<host>_<YYYYMMDDTHHMMSSZ>_<random>/attempt_<n>/<local_rank>/
///       stdout.log, stderr.log, error.json
///   <root>/<run>/attempt_<n>/filtered_stdout.log, filtered_stderr.log (--duplicate-*-filters)
///   <root>/<run>/attempt_<n>/<local_rank>_generation_<g>/ (--restart-policy failed: the worker
///       that replaced local rank <local_rank> in generation <g>; its predecessors' files stay)
///
/// With --log-dir, <root> is that directory and <root>/latest links to the newest run. Without it,
/// error files go to a private directory on tmpfs (/dev/shm: microseconds per mkdir, not the ~0.1
/// ms of a disk), or under $TMPDIR when set, or /tmp when /dev/shm is short of space or inodes;
/// it is removed at exit. Log files, if any, then go to a new directory under $TMPDIR (or /tmp)
/// that is kept and announced. A multi-node round that reuses a restart count (a node joined,
/// not a restart) gets attempt_<n>_round_<r>.

#include <utility>
#include <string>
#include <vector>

namespace ptrun::launcher {

class LogLayout {
  public:
    /// `log_dir`: --log-dir, "" for temporary directories; `host`: this node's name (its first
    /// label goes into the run directory's name); `tmpdir`: $TMPDIR, "" when unset; `nproc`: the
    /// workers per attempt (how much room the tmpfs must have).
    LogLayout(std::string log_dir, std::string run_id, std::string host, std::string tmpdir,
              int nproc);
    /// Removes the temporary error-file directories.
    ~LogLayout();
    LogLayout(const LogLayout&) = delete;
    LogLayout& operator=(const LogLayout&) = delete;

    /// With --log-dir: creates it and this run's directory and points <log-dir>/latest at it;
    /// nothing otherwise. Returns a warning to log ("" when none). Throws UsageError when
    /// --log-dir cannot be created or written, EnvironmentError when its file system is full.
    std::string prepare();
    /// The following directories belong to attempt `restart_count` (multi-node: of `round`).
    void begin_attempt(int restart_count, int round);
    /// Local rank `local_rank`'s next directories are its replacement's of generation
    /// `generation` (<local_rank>_generation_<g>), until the next attempt.
    void begin_generation(int local_rank, int generation);
    /// The directory holding one worker's error.json in the current attempt, created new.
    /// Throws EnvironmentError.
    std::string error_dir(int local_rank);
    /// The directory holding one worker's log files, created if missing. Throws EnvironmentError.
    std::string log_dir(int local_rank);
    /// The current attempt's directory of log files (attempt_N: the filtered_*.log files of
    /// --duplicate-*-filters), created if missing. Throws EnvironmentError.
    std::string attempt_log_dir();
    /// The run's directory of log files, "" until the first log_dir call (or prepare()).
    std::string run_log_dir() const { return logs_.run; }
    /// False when error files are temporary (removed at exit): reports then carry their content.
    bool error_files_kept() const { return !errors_.temporary; }
    /// The temporary error-file root the destructor removes, "" when there is none (yet).
    std::string temporary_error_root() const { return errors_.temporary ? errors_.path : ""; }
    /// At the end of a run without --log-dir whose logs went to a temporary directory (--tee,
    /// --redirects, filters): when `may_remove` (no report names a file in it) and no file in it
    /// holds a byte (the workers wrote nothing there), removes it and returns ""; else keeps it
    /// and returns the run's directory, for ptrun to say where it is. "" without such a
    /// directory. Never throws.
    std::string settle_temporary_logs(bool may_remove) noexcept;

  private:
    struct Root {
        std::string path;        ///< the directory holding run directories
        std::string run;         ///< this run's directory, "" until created
        bool temporary = false;  ///< removed at exit
        bool tmpfs = false;      ///< on /dev/shm: falls back to disk when full
        std::string attempt;     ///< the attempt whose directory exists in `run`
    };
    void open_error_root();
    void open_temp_log_root();
    void make_run_dir(Root& root);
    /// Removes the directories made below the temporary root `root`, then `root`, one rmdir each;
    /// false as soon as one is not empty (a worker's file) or not a directory.
    bool remove_made(const std::string& root) const;
    /// Local rank's directory of the current attempt in `root`; -1: the attempt's directory.
    std::string worker_dir(Root& root, int local_rank);

    std::string requested_;
    std::string run_id_;
    std::string host_;
    std::string tmpdir_;
    int nproc_;
    Root errors_;
    Root logs_;
    std::string attempt_ = "attempt_0";
    std::vector<std::string> attempts_used_;
    /// Local ranks replaced in the current attempt and the generation of their replacement.
    std::vector<std::pair<int, int>> generations_;
    std::vector<std::string> temp_roots_;  ///< removed at exit
    /// The directories made (run, attempt and worker directories), in the order made: at exit,
    /// removed deepest first without listing them when nothing else was put there.
    std::vector<std::string> made_;
};

}  // namespace ptrun::launcher
