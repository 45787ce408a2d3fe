#pragma once
/// Where per-worker files go: <root>/<run-id>/attempt_<n>/<local_rank>/{stdout,stderr}.log and
/// error.json, as torchrun lays them out.

#include <string>

namespace ptrun::launcher {

class LogLayout {
public:
    /// Uses `log_dir`, or a fresh temporary directory when it is empty (created on first use).
    LogLayout(std::string log_dir, std::string run_id);
    /// Removes a temporary root unless keep() was called.
    ~LogLayout();
    LogLayout(const LogLayout&) = delete;
    LogLayout& operator=(const LogLayout&) = delete;

    /// The directory of one worker of one attempt, created if missing. Throws std::runtime_error.
    std::string worker_dir(int attempt, int local_rank);
    /// Keep the root at exit even when it is temporary (log files were written there).
    void keep() { keep_ = true; }
    /// The run's directory, "" until the first worker_dir call.
    std::string run_dir() const { return root_.empty() ? "" : root_ + "/" + run_id_; }

private:
    std::string requested_;
    std::string run_id_;
    std::string root_;
    bool temporary_ = false;
    bool keep_ = false;
};

}  // namespace ptrun::launcher
