#pragma once
/// GenerationBoard: the agent's side of --restart-policy failed's keys in the workers' store
/// (env/generation_keys.hpp, README "Recovery in place"): it writes the latest generation, a
/// generation's `begun` and supersedes the previous one's `ready`, and waits for the workers to
/// join it.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {

class GenerationBoard {
  public:
    /// Called on the waiting thread: generation `generation` (or a newer one that superseded it)
    /// was joined by every worker (`joined`), or --recovery-timeout ran out first (or the store
    /// failed: `joined` false).
    using Ended = std::function<void(int generation, bool joined)>;

    /// Connects to the workers' store at host:port. Throws rdzv::StoreError.
    GenerationBoard(const std::string& host, std::uint16_t port);
    /// Stops waiting (stop()); never throws.
    ~GenerationBoard();
    GenerationBoard(const GenerationBoard&) = delete;
    GenerationBoard& operator=(const GenerationBoard&) = delete;

    /// A new generation begins with `replaced` global ranks; returns its number, allocated
    /// job-wide (every agent adds to the latest-generation counter). The previous generation is
    /// superseded unless ready, the keys are set, and a thread waits up to `timeout` for the
    /// generation's `ready` key (following `superseded` to newer generations, which other agents
    /// may begin), then calls `ended` (not when stopped). Throws rdzv::StoreError.
    int begin(const std::vector<int>& replaced, std::chrono::milliseconds timeout, Ended ended);
    /// Stops the waiting thread (before the store is wiped for a group restart). Never throws.
    void stop() noexcept;

  private:
    rdzv::TcpStoreClientOptions options_;
    rdzv::TcpStoreClient writer_;
    std::unique_ptr<rdzv::TcpStoreClient> waiter_client_;
    std::thread waiter_;
    std::atomic<bool> stopping_{false};  ///< set while stop() interrupts the waiter
};

}  // namespace ptrun::launcher
