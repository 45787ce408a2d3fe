#include "peer_memory.hpp"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp::detail {

PeerMemory::PeerMemory(std::vector<int> pids, std::vector<int> global_ranks)
    : pids_(std::move(pids)), global_ranks_(std::move(global_ranks)) {}

void PeerMemory::transfer(bool write, int index, void* local, std::uint64_t remote,
                          std::size_t bytes, const char* collective) const {
    const auto i = static_cast<std::size_t>(index);
    auto* here = static_cast<char*>(local);
    while (bytes > 0) {
        // The kernel may move less than asked (it stops at a fault); go on from there.
        iovec mine{here, bytes};
        iovec theirs{reinterpret_cast<void*>(remote), bytes};
        const ssize_t moved = write ? ::process_vm_writev(pids_[i], &mine, 1, &theirs, 1, 0)
                                    : ::process_vm_readv(pids_[i], &mine, 1, &theirs, 1, 0);
        if (moved > 0) {
            here += moved;
            remote += static_cast<std::uint64_t>(moved);
            bytes -= static_cast<std::size_t>(moved);
            continue;
        }
        if (moved < 0 && errno == EINTR) continue;
        const int err = moved == 0 ? EFAULT : errno;
        if (err == ESRCH) throw PeerLost(collective, global_ranks_[i], "its process exited");
        throw CollectiveError(std::string(collective) + ": " +
                              (write ? "process_vm_writev to" : "process_vm_readv from") +
                              " rank " + std::to_string(global_ranks_[i]) + " (pid " +
                              std::to_string(pids_[i]) + ") failed: " + std::strerror(err));
    }
}

void PeerMemory::read(int index, void* local, std::uint64_t remote, std::size_t bytes,
                      const char* collective) const {
    transfer(false, index, local, remote, bytes, collective);
}

void PeerMemory::write(int index, std::uint64_t remote, const void* local, std::size_t bytes,
                       const char* collective) const {
    transfer(true, index, const_cast<void*>(local), remote, bytes, collective);
}

bool PeerMemory::reachable(int index, std::uint64_t remote, std::uint64_t expected,
                           std::string* why) const {
    std::uint64_t value = 0;
    try {
        read(index, &value, remote, sizeof value, "single-copy check");
    } catch (const CollectiveError& e) {
        if (why != nullptr) *why = e.what();
        return false;
    }
    if (value == expected) return true;
    if (why != nullptr) {
        *why = "rank " + std::to_string(global_ranks_[static_cast<std::size_t>(index)]) +
               "'s check word read back wrong";
    }
    return false;
}

}  // namespace ptrun::ddp::detail
