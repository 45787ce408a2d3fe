#pragma once
/// TcpRing: ring allreduce between node leaders over TCP (reduce-scatter then allgather).

#include <cstddef>
#include <vector>

#include "call_timer.hpp"
#include "ptrun/ddp/types.hpp"
#include "tcp_link.hpp"

namespace ptrun::ddp::detail {

/// Node `index` of `nodes` sends to node index+1 on `next` and receives from index-1 on `prev`.
/// Sending and receiving overlap (poll on both sockets), so neither side blocks the other.
/// A closed or reset connection throws PeerLost naming that leader's global rank; the deadline
/// throws CollectiveTimeout. After any failure, shutdown() makes the peers fail fast too.
class TcpRing {
public:
    /// `leader_ranks[i]` is node i's leader's global rank (for messages).
    TcpRing(int index, std::vector<int> leader_ranks, Fd prev, Fd next);

    /// In-place ring allreduce of `count` elements (op must not be Avg: the caller finishes it).
    void allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const CallTimer& timer);
    /// Shuts both sockets down (peers see EOF at once). Never throws.
    void shutdown() noexcept;

private:
    void exchange(const char* send_buf, std::size_t send_len, char* recv_buf,
                  std::size_t recv_len, const CallTimer& timer);
    int prev_rank() const;
    int next_rank() const;

    int index_;
    std::vector<int> leader_ranks_;
    Fd prev_;
    Fd next_;
    std::vector<char> scratch_;
};

}  // namespace ptrun::ddp::detail
