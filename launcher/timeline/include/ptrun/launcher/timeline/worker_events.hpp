#pragma once
/// What workers tell the agent of their start-up, one datagram per event on the agent's events
/// socket (an abstract AF_UNIX datagram socket named in PTRUN_EVENTS_SOCKET as "@name"):
///   ptrun-event 1 PHASE MONOTONIC_NS
/// PHASE is python_up, process_group_start, process_group_ready or first_progress; the time is
/// the sender's CLOCK_MONOTONIC. The Python runner and heartbeat.py / heartbeat.h send them. The
/// sender is who the kernel says it is (SCM_CREDENTIALS): the agent takes an event only from a
/// live worker of the attempt (or a process of its process group), whatever the text claims.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptrun/launcher/timeline/timeline_event.hpp"

namespace ptrun::launcher {

/// The variable that names the socket for the workers.
inline constexpr const char* kEventsSocketEnv = "PTRUN_EVENTS_SOCKET";
/// Longest datagram read; longer ones are dropped.
inline constexpr std::size_t kMaxEventMessage = 128;

struct WorkerEventMessage {
    Phase phase = Phase::PythonUp;
    std::uint64_t t_ns = 0;
    bool operator==(const WorkerEventMessage&) const = default;
};

/// The event in `text`; nullopt unless it is exactly "ptrun-event 1 PHASE NS" (optionally one
/// trailing newline) with a worker phase and a decimal time.
std::optional<WorkerEventMessage> parse_worker_event(std::string_view text);

/// One datagram as received: its text and the sender's pid (0 when the kernel gave none).
struct ReceivedEvent {
    std::string text;
    pid_t pid = 0;
};

/// The agent's events socket. Move-only; closes on destruction.
class EventSocket {
  public:
    /// Binds a fresh abstract name ("ptrun-events-<pid>-<random>") with SO_PASSCRED, non-blocking
    /// and close-on-exec. Throws std::system_error naming the socket.
    static EventSocket open();
    ~EventSocket();
    EventSocket(EventSocket&& other) noexcept;
    EventSocket& operator=(EventSocket&& other) noexcept;
    EventSocket(const EventSocket&) = delete;
    EventSocket& operator=(const EventSocket&) = delete;

    /// The descriptor, for the agent's loop to wait on.
    int fd() const noexcept { return fd_; }
    /// PTRUN_EVENTS_SOCKET's value: "@" and the abstract name.
    const std::string& address() const noexcept { return address_; }
    /// The next datagram, or nullopt when none is waiting. Never blocks, never throws;
    /// oversized datagrams come back with empty text.
    std::optional<ReceivedEvent> receive() noexcept;

  private:
    EventSocket(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
    int fd_ = -1;
    std::string address_;
};

}  // namespace ptrun::launcher
