#pragma once
/// What workers tell the agent of their start-up, one datagram per event on the agent's events
/// channel, an AF_UNIX datagram socket pair: the agent reads one end, and the workers inherit the
/// other at a descriptor PTRUN_EVENTS_SOCKET names ("fd:4"):
///   ptrun-event 1 PHASE MONOTONIC_NS
/// PHASE is python_up, process_group_start, process_group_ready or first_progress; the time is
/// the sender's CLOCK_MONOTONIC. The Python runner and heartbeat.py / heartbeat.h send them.
/// The channel has no name: only the job's workers (and what they start) hold its sending end, so
/// no other process, of this user or another, can flood or forge it. The sender is also who the
/// kernel says it is (SCM_CREDENTIALS): the agent takes an event only from a live worker of the
/// attempt (or a process of its process group), whatever the text claims.

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

/// The agent's events channel. Move-only; closes both ends on destruction.
class EventSocket {
  public:
    /// A fresh socket pair: the receiving end with SO_PASSCRED, non-blocking; both close-on-exec
    /// (workers get the sending end on purpose, SpawnRequest::events_fd). Throws
    /// std::system_error naming the channel.
    static EventSocket open();
    ~EventSocket();
    EventSocket(EventSocket&& other) noexcept;
    EventSocket& operator=(EventSocket&& other) noexcept;
    EventSocket(const EventSocket&) = delete;
    EventSocket& operator=(const EventSocket&) = delete;

    /// The receiving end, for the agent's loop to wait on.
    int fd() const noexcept { return fd_; }
    /// The sending end, which every worker (and the zygote) inherits at `child_fd`.
    int sender() const noexcept { return sender_; }
    /// PTRUN_EVENTS_SOCKET's value for a child that has the sending end at `child_fd`: "fd:N".
    static std::string address(int child_fd) { return "fd:" + std::to_string(child_fd); }
    /// The next datagram, or nullopt when none is waiting. Never blocks, never throws;
    /// oversized datagrams come back with empty text.
    std::optional<ReceivedEvent> receive() noexcept;

  private:
    EventSocket(int fd, int sender) : fd_(fd), sender_(sender) {}
    int fd_ = -1;
    int sender_ = -1;
};

}  // namespace ptrun::launcher
