#pragma once
/// GenerationWatch: under --restart-policy failed, learns without polling that the launcher began
/// the next recovery generation (a peer was replaced), for a backend whose collectives cannot see
/// a peer's death themselves: NCCL between the GPUs of a node waits on a dead peer until its
/// timeout.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::ddp::detail {

class GenerationWatch {
  public:
    /// Waits, on its own connection to the workers' store at `host`:`port` and its own thread
    /// (one blocking WAIT, no polling), for generation `generation` + 1 to begin. Throws
    /// rdzv::StoreError when the store cannot be reached within `connect_timeout`.
    GenerationWatch(const std::string& host, int port, std::int64_t generation,
                    std::chrono::milliseconds connect_timeout);
    /// Interrupts the wait and joins the thread; never throws.
    ~GenerationWatch();
    GenerationWatch(const GenerationWatch&) = delete;
    GenerationWatch& operator=(const GenerationWatch&) = delete;

    /// True once the next generation has begun. From any thread; never blocks.
    bool next_begun() const noexcept { return begun_.load(std::memory_order_acquire); }
    /// The generation watched for: the one after this group's.
    std::int64_t next() const noexcept { return next_; }

  private:
    std::unique_ptr<rdzv::TcpStoreClient> client_;
    std::int64_t next_;
    std::atomic<bool> begun_{false};
    std::thread thread_;
};

}  // namespace ptrun::ddp::detail
