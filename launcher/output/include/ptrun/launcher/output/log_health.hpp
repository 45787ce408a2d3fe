#pragma once
/// Says, once per run, that worker logs are being cut short, naming the file and the reason: a
/// write that failed in a log file ptrun writes itself (--tee), or, for log files the workers
/// write themselves (--redirects), a full file system found when a worker exits. Used on the
/// agent's event loop only.

#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

/// Below this many free bytes a log file system counts as full.
inline constexpr unsigned long long kLogSpaceLow = 64 * 1024;

class LogHealth {
  public:
    explicit LogHealth(std::shared_ptr<spdlog::logger> log);

    /// A write to `path` (a log ptrun writes) failed with errno `err`.
    void write_failed(const std::string& path, int err);
    /// A worker that wrote `path` itself has exited: warns when that file system is full (free
    /// space or inodes). Does not block beyond one statvfs.
    void check_full(const std::string& path);

  private:
    std::shared_ptr<spdlog::logger> log_;
    bool warned_ = false;
};

}  // namespace ptrun::launcher
