#pragma once
/// Recovery in place: a worker's side of ptrun's --restart-policy failed. When a worker dies, the
/// launcher starts a replacement for it alone and begins a new generation; the survivors, whose
/// collectives failed (PeerLost, CollectiveTimeout), drop their group, join that generation with
/// the replacement and build the generation's group. The store keys (ptrun/generation,
/// ptrun/gen/<G>/{begun,joined,ready}) and the algorithm: README.md, "Recovery in place with
/// ptrun::ddp".

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ptrun/ddp/init.hpp"
#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp {

/// This worker's connection to the generation keys in the job's store (MASTER_ADDR,
/// MASTER_PORT). Every wait is a blocking store WAIT bounded by `timeout`; nothing polls.
/// Errors: CollectiveTimeout naming the key waited for, CollectiveError for a store failure or
/// keys that break the protocol. Not thread-safe.
class Recovery {
  public:
    /// Connects to the store at context.master_addr:master_port (within `timeout`); throws
    /// CollectiveError naming the address when it cannot.
    Recovery(const RunContext& context, std::chrono::milliseconds timeout);
    ~Recovery();
    Recovery(const Recovery&) = delete;
    Recovery& operator=(const Recovery&) = delete;

    /// Counts this worker into generation `generation`; the worker that completes the count
    /// marks it ready. Blocks until it is ready, at most the timeout. If the launcher superseded
    /// it (a newer generation began first), joins the latest generation instead. Returns the
    /// generation joined.
    std::int64_t join(std::int64_t generation);

    /// Blocks until generation `generation` + 1 has begun (at most the timeout); returns the
    /// latest generation, which may be newer still.
    std::int64_t await_next(std::int64_t generation);

    /// The global ranks the generations after `from` up to `to` replaced, as the launcher wrote
    /// them: "2", "1,3". Blocks at most the timeout per generation.
    std::string replaced_ranks(std::int64_t from, std::int64_t to);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The group of a generation and where it came from.
struct JoinedGroup {
    std::unique_ptr<ProcessGroup> group;
    std::int64_t generation = 0;  ///< the generation joined
    std::string replaced;         ///< ranks replaced since the caller's last group ("2", "1,3")
};

/// A replacement's start (context.generation > 0): joins that generation (or a newer one) and
/// builds its group. Moves context.generation to the generation joined and restart_count with it
/// (their difference, the attempt's base, stays). Blocks; throws CollectiveError/Timeout.
JoinedGroup join_process_group(Recovery& recovery, RunContext& context,
                               const InitOptions& options = {});

/// After a collective failed: destroys `broken` first (its shared segment and sockets are
/// released; never throws, never waits on the lost peer), waits for the next generation, joins
/// it and builds its group; context moves as in join_process_group. Blocks; throws
/// CollectiveError/Timeout.
JoinedGroup reform_process_group(std::unique_ptr<ProcessGroup> broken, Recovery& recovery,
                                 RunContext& context, const InitOptions& options = {});

}  // namespace ptrun::ddp
