#pragma once
/// FailureBoard: node leaders' notes in the store on why they broke the ring between nodes.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::ddp::detail {

/// One leader's note: the rank it blamed and its own error message.
struct FailureNote {
    int culprit = -1;
    std::string what;
};

/// When a leader breaks the ring it posts why under its node's key before shutting its links;
/// the leader on the other end of a closed link reads that note and blames the rank that
/// failed, not the messenger. A default-constructed board is off (no notes: blame the link).
class FailureBoard {
  public:
    FailureBoard() = default;
    /// Notes live in `store` under `prefix`/<node index>.
    FailureBoard(std::shared_ptr<rdzv::Store> store, std::string prefix);

    /// Posts node `node`'s note (a fire-and-forget SET: never waits on the network). Never throws.
    void post(int node, int culprit, std::string_view what) noexcept;
    /// Node `node`'s note, waiting at most `wait` for it to appear; nullopt when none came, the
    /// board is off or the store failed. Never throws.
    std::optional<FailureNote> read(int node, std::chrono::milliseconds wait) noexcept;

  private:
    std::string key(int node) const;

    std::shared_ptr<rdzv::Store> store_;
    std::string prefix_;
};

}  // namespace ptrun::ddp::detail
