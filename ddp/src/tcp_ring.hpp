#pragma once
/// TcpRing: ring allreduce between node leaders over TCP (reduce-scatter then allgather).

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "call_timer.hpp"
#include "failure_board.hpp"
#include "ptrun/ddp/types.hpp"
#include "tcp_link.hpp"

namespace ptrun::ddp::detail {

/// Node `index` of `nodes` sends to node index+1 on `next` and receives from index-1 on `prev`.
/// Sending and receiving overlap (poll on both sockets), so neither side blocks the other.
/// After any failure, abort() posts why on the FailureBoard and shuts both links, so the peers
/// fail fast. A closed or reset link throws PeerLost naming the rank in the far leader's note
/// (the rank that actually failed), else that leader. The ring waits kRingGrace past the
/// collective's deadline, so that the node holding a silent rank names it first; then it throws
/// CollectiveTimeout naming the leader it waits for.
class TcpRing {
  public:
    /// `leader_ranks[i]` is node i's leader's global rank (for messages).
    TcpRing(int index, std::vector<int> leader_ranks, Fd prev, Fd next, FailureBoard board = {});

    /// In-place ring allreduce of `count` elements (op must not be Avg: the caller finishes it).
    void allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const CallTimer& timer);
    /// Posts "rank `culprit` failed: `what`" for this node, then shuts both links down (peers
    /// see EOF at once). Never throws.
    void abort(int culprit, std::string_view what) noexcept;

    /// How long past a collective's deadline the ring still waits for data or a note.
    static constexpr std::chrono::milliseconds kRingGrace{500};
    /// How long a leader whose link closed waits for the far leader's note (posted before it
    /// closed the link, but through the store, so it may arrive a moment later).
    static constexpr std::chrono::milliseconds kNoteWait{500};
    /// The most allreduce() runs past a collective's deadline, plus a margin.
    static constexpr std::chrono::milliseconds kMaxOverrun = kRingGrace + kNoteWait + kNoteWait;

  private:
    void exchange(const char* send_buf, std::size_t send_len, char* recv_buf, std::size_t recv_len,
                  const CallTimer& timer);
    /// Throws PeerLost naming the culprit of node `node`'s note if one arrives within `wait`.
    void blame_noted(int node, const CallTimer& timer, std::chrono::milliseconds wait);
    /// Throws PeerLost for the link to node `node`: the culprit of its note, else its leader.
    [[noreturn]] void lose(int node, const CallTimer& timer, const std::string& detail);
    int prev_index() const;
    int next_index() const;
    /// Global rank of node `node`'s leader.
    int leader(int node) const;

    int index_;
    std::vector<int> leader_ranks_;
    Fd prev_;
    Fd next_;
    FailureBoard board_;
    std::vector<char> scratch_;
};

}  // namespace ptrun::ddp::detail
