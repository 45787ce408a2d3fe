#pragma once
/// The start-up timeline's data: what happened to each rank of each attempt on one node, in that
/// node's CLOCK_MONOTONIC, and how a node's timeline travels to the store host (JSON, bounded:
/// it comes over the network).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// What one event marks. Rank events carry a rank; node events (rank -1) are the agent's own.
enum class Phase {
    AgentStart,         ///< node: ptrun started (attempt 0's start)
    RendezvousJoin,     ///< node: joined the rendezvous for a round
    RoundClosed,        ///< node: the round closed with this node in it
    AttemptStart,       ///< node: the attempt's workers are about to start
    Spawn,              ///< rank: ptrun asked for the process (clone or the zygote's fork)
    Started,            ///< rank: the process runs the program (exec done, or forked)
    PythonUp,           ///< rank: the Python runner runs (the interpreter is up)
    ProcessGroupStart,  ///< rank: init_process_group called (it connects to the workers' store)
    ProcessGroupReady,  ///< rank: init_process_group returned
    FirstProgress,      ///< rank: the first heartbeat or optimizer step
    Exit,               ///< rank: reaped; detail: how it ended
    Restart,            ///< node: the group restarts; detail: why
    Hang,               ///< node: a hang was found; detail: who
    Failure,            ///< node: the attempt failed; detail: the root cause
    NodeChange,         ///< node: the membership changed; detail: how
    PreloadSettled,     ///< node: --preload's zygote is ready, or not used (detail)
    GenerationJoined,   ///< node: every worker joined a recovery's generation (detail: which)
};

/// "spawn", "python_up", ...: the phase's name in messages, JSON and trace.json.
std::string_view phase_name(Phase phase);
/// The phase named `name`; nullopt for an unknown name.
std::optional<Phase> phase_named(std::string_view name);
/// Whether events of `phase` belong to a rank (else to the node's agent).
bool is_rank_phase(Phase phase);

struct TimelineEvent {
    std::uint64_t t_ns = 0;  ///< CLOCK_MONOTONIC of the node that recorded it
    int attempt = 0;         ///< TORCHELASTIC_RESTART_COUNT of the attempt it belongs to
    int rank = -1;           ///< global rank; -1 for node events
    Phase phase = Phase::AgentStart;
    std::string detail;  ///< at most kMaxEventDetail bytes
    bool operator==(const TimelineEvent&) const = default;
};

/// A rank's memory at one moment (trace.json's counter tracks), read when ptrun already acts
/// for that worker: its spawn and start, its events on the timeline, its exit (0 now: it is
/// gone; its peak as reaped) and each request to the health endpoint or status publish.
struct MemorySample {
    std::uint64_t t_ns = 0;  ///< CLOCK_MONOTONIC of the node that recorded it
    int rank = 0;
    std::optional<std::uint64_t> bytes = std::nullopt;  ///< resident now (live_usage.hpp)
    std::optional<std::uint64_t> peak_bytes = std::nullopt;
    bool operator==(const MemorySample&) const = default;
};

/// One node's events, and how to put them on the store host's clock.
struct NodeTimeline {
    std::string node;                   ///< the node's name (its hostname, or its rendezvous id)
    int group_rank = 0;                 ///< in the latest round
    std::int64_t offset_ns = 0;         ///< add to this node's times for the store host's clock
    std::uint64_t offset_error_ns = 0;  ///< half the round trip the offset was measured with
    std::vector<TimelineEvent> events;
    std::vector<MemorySample> memory = {};  ///< at most kMaxMemorySamples, oldest first
    bool operator==(const NodeTimeline&) const = default;
};

inline constexpr std::size_t kMaxEventDetail = 200;
/// Events one node keeps (and sends): the oldest attempts' go first beyond it.
inline constexpr std::size_t kMaxNodeEvents = 4096;

/// Appends `event` (detail cut to kMaxEventDetail); beyond kMaxNodeEvents drops the oldest
/// attempt's events first (never the newest attempt's, whose oldest events go instead).
void add_event(NodeTimeline& timeline, TimelineEvent event);

/// Memory samples one node keeps (and sends): beyond it every other sample is dropped, so the
/// trace keeps the whole run at half the resolution.
inline constexpr std::size_t kMaxMemorySamples = 2048;

/// Appends `sample`; at kMaxMemorySamples halves the samples first (every other one dropped).
void add_memory_sample(NodeTimeline& timeline, MemorySample sample);

/// The node's timeline as JSON (for the store).
std::string encode(const NodeTimeline& timeline);
/// Throws std::runtime_error naming what is malformed; refuses more than kMaxNodeEvents events
/// or kMaxMemorySamples samples, details longer than kMaxEventDetail, names longer than 255
/// bytes and unknown phases ("memory" may be absent: an older ptrun's timeline).
NodeTimeline decode_node_timeline(std::string_view text);

}  // namespace ptrun::launcher
