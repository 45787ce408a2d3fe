#pragma once
/// HeartbeatFile: the launcher's side of heartbeat.h. The launcher creates one record file per
/// worker and attempt, puts its path in that worker's PTRUN_HEARTBEAT_FILE, and reads it whenever
/// it wants to know the worker's progress (a hang check's timer, a /status request): a read is
/// one pread() of the 256-byte record from tmpfs (about a microsecond), it never blocks and never
/// waits for the worker. The launcher does not map the record: a worker may truncate, rewrite or
/// remove its own file, and a mapping would turn that into SIGBUS in the launcher; a read of a
/// damaged record says what is wrong instead (HeartbeatSample::problem).
///
/// Use by the agent (launcher/src/agent_watchdog.cpp): before spawning attempt N, create
/// `<private tmpfs dir ptrun-XXXXXX>/hb-<round>-<N>-<local rank>` for every local rank (O_EXCL,
/// mode 0600); destroy them when the attempt ends (a process of an old attempt that still has
/// its record mapped then writes to memory nobody reads, never into the new attempt's records).

#include <utility>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ptrun/progress/heartbeat.h"
#include "ptrun/progress/heartbeat.hpp"

namespace ptrun::progress {

/// A named section a worker announced (heartbeat.h: ptrun_heartbeat_enter).
struct SectionSample {
    std::string name;
    std::uint64_t started_ns = 0;   ///< CLOCK_MONOTONIC
    std::uint64_t deadline_ns = 0;  ///< 0: no deadline
    bool operator==(const SectionSample&) const = default;
};

/// One worker's record at one moment.
struct HeartbeatSample {
    std::uint64_t count = 0;             ///< beats so far (a change means progress)
    std::uint64_t last_progress_ns = 0;  ///< CLOCK_MONOTONIC of the latest beat; 0: never beaten
    int writer_pid = 0;                  ///< the last process that opened the record (0: none)
    /// The open section, if any. A section a writer is changing at this very moment (or stopped
    /// in the middle of changing) reads as none.
    std::optional<SectionSample> section;
    /// Empty while the record is sound; else what is wrong with it ("shrank to 0 bytes", "is
    /// corrupt (its last beat is 2.9e+08 s in the future)"), and the fields above are the last
    /// sound sample's.
    std::string problem;
    bool operator==(const HeartbeatSample&) const = default;
};

/// Nanoseconds of CLOCK_MONOTONIC now: the records' clock.
std::uint64_t monotonic_now_ns() noexcept;
/// A record time as a steady_clock time point (libstdc++'s steady_clock is CLOCK_MONOTONIC).
inline std::chrono::steady_clock::time_point to_steady(std::uint64_t ns) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

/// One record file, created and owned by the launcher. Move-only; the destructor closes it and
/// removes its name.
class HeartbeatFile {
  public:
    /// Creates `path` (must not exist; mode 0600), writes an empty version-1 record for
    /// `local_rank` and keeps it open. Throws HeartbeatError naming the path and the reason.
    static HeartbeatFile create(std::string path, int local_rank);

    ~HeartbeatFile();
    HeartbeatFile(HeartbeatFile&& other) noexcept;
    HeartbeatFile& operator=(HeartbeatFile&& other) noexcept;
    HeartbeatFile(const HeartbeatFile&) = delete;
    HeartbeatFile& operator=(const HeartbeatFile&) = delete;

    /// The path to give the worker in PTRUN_HEARTBEAT_FILE.
    const std::string& path() const noexcept { return path_; }
    /// The record now; a damaged one (shorter than a record, its header overwritten, times that
    /// no clock of this boot can hold) reads as the last sound sample with `problem` set. Never
    /// blocks, never throws, never faults whatever the worker did to the file.
    HeartbeatSample read() const noexcept;
    /// Removes the name now (whoever mapped the record keeps it). Idempotent.
    void unlink() noexcept;

  private:
    HeartbeatFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
    void release() noexcept;

    std::string path_;
    int fd_ = -1;
    bool linked_ = true;
    mutable HeartbeatSample last_sound_;  ///< what a damaged record reads as
};

}  // namespace ptrun::progress
