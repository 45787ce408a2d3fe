#pragma once
/// Where per-worker files go: <root>/<run-id>/attempt_<n>/<local_rank>/{stdout,stderr}.log and
/// error.json, as torchrun lays them out. With --log-dir everything goes there. Without it, error
/// files go to a private directory under $TMPDIR, else on tmpfs (/dev/shm: creating it costs
/// microseconds, not the ~0.1 ms per mkdir of a disk), removed at exit; log files, if any, go to a
/// directory under $TMPDIR (or /tmp) that is kept and announced.

#include <string>

namespace ptrun::launcher {

class LogLayout {
public:
    LogLayout(std::string log_dir, std::string run_id);
    /// Removes the temporary error-file root.
    ~LogLayout();
    LogLayout(const LogLayout&) = delete;
    LogLayout& operator=(const LogLayout&) = delete;

    /// The directory holding one worker's error.json, created if missing. Throws std::runtime_error.
    std::string error_dir(int attempt, int local_rank);
    /// The directory holding one worker's log files, created if missing. Throws std::runtime_error.
    std::string log_dir(int attempt, int local_rank);
    /// The run's log directory, "" until the first log_dir call.
    std::string run_log_dir() const { return log_root_.empty() ? "" : log_root_ + "/" + run_id_; }
    /// The temporary error-file root the destructor removes, "" when there is none (yet).
    std::string temporary_error_root() const { return error_root_temporary_ ? error_root_ : ""; }

private:
    std::string make_worker_dir(std::string& root, const char* base, int attempt, int local_rank);

    std::string requested_;
    std::string run_id_;
    std::string error_root_;
    std::string log_root_;
    bool error_root_temporary_ = false;
};

}  // namespace ptrun::launcher
