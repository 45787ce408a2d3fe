#include "tcp_ring.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "ptrun/ddp/errors.hpp"
#include "reduce_kernels.hpp"
#include "shm_collectives.hpp"

namespace ptrun::ddp::detail {

TcpRing::TcpRing(int index, std::vector<int> leader_ranks, Fd prev, Fd next, FailureBoard board)
    : index_(index),
      leader_ranks_(std::move(leader_ranks)),
      prev_(std::move(prev)),
      next_(std::move(next)),
      board_(std::move(board)) {}

int TcpRing::prev_index() const {
    const int n = static_cast<int>(leader_ranks_.size());
    return (index_ + n - 1) % n;
}

int TcpRing::next_index() const { return (index_ + 1) % static_cast<int>(leader_ranks_.size()); }

int TcpRing::leader(int node) const { return leader_ranks_[static_cast<std::size_t>(node)]; }

void TcpRing::abort(int culprit, std::string_view what) noexcept {
    board_.post(index_, culprit, what);
    if (prev_.get() >= 0) ::shutdown(prev_.get(), SHUT_RDWR);
    if (next_.get() >= 0) ::shutdown(next_.get(), SHUT_RDWR);
}

void TcpRing::blame_noted(int node, const CallTimer& timer, std::chrono::milliseconds wait) {
    if (auto note = board_.read(node, wait)) {
        throw PeerLost(
            timer.collective, note->culprit,
            "rank " + std::to_string(leader(node)) + " broke the ring after: " + note->what);
    }
}

void TcpRing::lose(int node, const CallTimer& timer, const std::string& detail) {
    blame_noted(node, timer, kNoteWait);
    throw PeerLost(timer.collective, leader(node), detail);
}

void TcpRing::exchange(const char* send_buf, std::size_t send_len, char* recv_buf,
                       std::size_t recv_len, const CallTimer& timer) {
    std::size_t sent = 0, got = 0;
    while (sent < send_len || got < recv_len) {
        bool progressed = false;
        if (sent < send_len) {
            const ssize_t n =
                ::send(next_.get(), send_buf + sent, send_len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                sent += static_cast<std::size_t>(n);
                progressed = true;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                lose(next_index(), timer,
                     std::string("sending to it failed: ") + std::strerror(errno));
            }
        }
        if (got < recv_len) {
            const ssize_t n = ::recv(prev_.get(), recv_buf + got, recv_len - got, MSG_DONTWAIT);
            if (n > 0) {
                got += static_cast<std::size_t>(n);
                progressed = true;
            } else if (n == 0) {
                lose(prev_index(), timer, "its connection closed");
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                lose(prev_index(), timer,
                     std::string("receiving from it failed: ") + std::strerror(errno));
            }
        }
        if (progressed) continue;
        pollfd fds[2];
        nfds_t nfds = 0;
        if (sent < send_len) fds[nfds++] = {next_.get(), POLLOUT, 0};
        if (got < recv_len) fds[nfds++] = {prev_.get(), POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            timer.deadline + kRingGrace - std::chrono::steady_clock::now());
        if (left.count() <= 0 || ::poll(fds, nfds, static_cast<int>(left.count())) == 0) {
            blame_noted(got < recv_len ? prev_index() : next_index(), timer,
                        std::chrono::milliseconds(0));
            std::vector<int> waiting;
            if (got < recv_len) waiting.push_back(leader(prev_index()));
            if (sent < send_len && next_index() != prev_index()) {
                waiting.push_back(leader(next_index()));
            }
            throw CollectiveTimeout(timer.collective, waiting, timer.timeout);
        }
    }
}

void TcpRing::allreduce(void* data_ptr, std::size_t count, DType dtype, ReduceOp op,
                        const CallTimer& timer) {
    const int n = static_cast<int>(leader_ranks_.size());
    if (n == 1 || count == 0) return;
    auto* data = static_cast<char*>(data_ptr);
    const std::size_t esz = dtype_size(dtype);
    auto seg = [&](int i, std::size_t& begin, std::size_t& len) {
        const int k = ((i % n) + n) % n;
        begin = part_begin(count, n, k);
        len = part_begin(count, n, k + 1) - begin;
    };
    scratch_.resize((count / static_cast<std::size_t>(n) + 1) * esz);
    for (int t = 0; t < n - 1; ++t) {  // reduce-scatter
        std::size_t sb = 0, sl = 0, rb = 0, rl = 0;
        seg(index_ - t, sb, sl);
        seg(index_ - t - 1, rb, rl);
        exchange(data + sb * esz, sl * esz, scratch_.data(), rl * esz, timer);
        reduce2(dtype, op, data + rb * esz, data + rb * esz, scratch_.data(), rl);
    }
    for (int t = 0; t < n - 1; ++t) {  // allgather
        std::size_t sb = 0, sl = 0, rb = 0, rl = 0;
        seg(index_ + 1 - t, sb, sl);
        seg(index_ - t, rb, rl);
        exchange(data + sb * esz, sl * esz, data + rb * esz, rl * esz, timer);
    }
}

}  // namespace ptrun::ddp::detail
