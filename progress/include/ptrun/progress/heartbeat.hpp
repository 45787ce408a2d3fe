#pragma once
/// Heartbeat: the C++ writer over heartbeat.h's record (one per worker, named by
/// PTRUN_HEARTBEAT_FILE). A detached Heartbeat (default-constructed) makes every call a no-op, so
/// code beats unconditionally and pays a null check when not under ptrun.

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ptrun/progress/heartbeat.h"

namespace ptrun::progress {

/// The heartbeat file named by the environment cannot be used; the message names the path.
struct HeartbeatError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The environment variable the launcher sets (PTRUN_HEARTBEAT_FILE).
inline constexpr std::string_view kHeartbeatEnv = PTRUN_HEARTBEAT_ENV;

/// A mapped heartbeat record, or nothing. Move-only; unmaps on destruction. beat() is
/// thread-safe; enter()/leave() must not race with each other.
class Heartbeat {
  public:
    /// Detached: every call is a no-op.
    Heartbeat() = default;
    /// Maps the record at `path`. Throws HeartbeatError naming the path and the reason.
    static Heartbeat open(const std::string& path);
    /// open(path) when `path` is non-empty, else detached (how callers pass an env lookup).
    static Heartbeat open_if_set(const std::string& path);

    ~Heartbeat() { ptrun_heartbeat_close(record_); }
    Heartbeat(Heartbeat&& other) noexcept : record_(other.record_) { other.record_ = nullptr; }
    Heartbeat& operator=(Heartbeat&& other) noexcept;
    Heartbeat(const Heartbeat&) = delete;
    Heartbeat& operator=(const Heartbeat&) = delete;

    /// Whether beats reach a record.
    bool attached() const noexcept { return record_ != nullptr; }
    /// One beat (progress now). Never blocks, never throws.
    void beat() noexcept { ptrun_heartbeat_beat(record_); }
    /// Opens a named section that must end within `timeout` (<= 0: no deadline); a beat.
    void enter(const std::string& name, std::chrono::duration<double> timeout) noexcept {
        ptrun_heartbeat_enter(record_, name.c_str(), timeout.count());
    }
    /// Closes the open section; a beat.
    void leave() noexcept { ptrun_heartbeat_leave(record_); }

    /// enter() now, leave() when destroyed.
    class Section {
      public:
        Section(Heartbeat& hb, const std::string& name, std::chrono::duration<double> timeout)
            : hb_(&hb) {
            hb.enter(name, timeout);
        }
        ~Section() { hb_->leave(); }
        Section(const Section&) = delete;
        Section& operator=(const Section&) = delete;

      private:
        Heartbeat* hb_;
    };

  private:
    explicit Heartbeat(ptrun_heartbeat_record* record) : record_(record) {}
    ptrun_heartbeat_record* record_ = nullptr;
};

}  // namespace ptrun::progress
