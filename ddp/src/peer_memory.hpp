#pragma once
/// PeerMemory: reads and writes other local ranks' memory directly (Linux cross-memory attach).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptrun::ddp::detail {

/// process_vm_readv / process_vm_writev on the processes of a node's local ranks: one copy by
/// the kernel, no shared staging buffer (what Open MPI's vader BTL calls single-copy CMA). The
/// kernel allows it where this process may ptrace the peer (same user, no Yama restriction or
/// seccomp filter in the way); reachable() tells before anything relies on it.
class PeerMemory {
  public:
    /// `pids[i]` and `global_ranks[i]` describe local rank i.
    PeerMemory(std::vector<int> pids, std::vector<int> global_ranks);

    /// Copies `bytes` from `remote` in local rank `index`'s address space to `local`. Throws
    /// PeerLost if its process is gone, CollectiveError naming the errno otherwise; `collective`
    /// names the operation in the message.
    void read(int index, void* local, std::uint64_t remote, std::size_t bytes,
              const char* collective) const;
    /// Copies `bytes` from `local` to `remote` in local rank `index`'s address space; throws
    /// as read().
    void write(int index, std::uint64_t remote, const void* local, std::size_t bytes,
               const char* collective) const;
    /// True if the 8 bytes at `remote` in local rank `index`'s process can be read and hold
    /// `expected`; otherwise false, with the reason in `why`. Never throws.
    bool reachable(int index, std::uint64_t remote, std::uint64_t expected, std::string* why) const;

  private:
    void transfer(bool write, int index, void* local, std::uint64_t remote, std::size_t bytes,
                  const char* collective) const;

    std::vector<int> pids_;
    std::vector<int> global_ranks_;
};

}  // namespace ptrun::ddp::detail
