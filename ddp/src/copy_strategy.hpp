#pragma once
/// CopyStrategy: the ways the shared-memory allreduce moves a message between a node's ranks.

#include <cstdint>
#include <optional>
#include <string_view>

#include "ptrun/ddp/shm_copy.hpp"

namespace ptrun::ddp::detail {

/// Which is fastest depends on where the host placed the cores (whether they share a cache),
/// on the message size and on the load, so StrategyTuner times them; all give the same bits.
enum class CopyStrategy : std::uint8_t {
    /// Through the shared slots; what another core reads next is written with non-temporal
    /// stores, so it fetches the lines from memory instead of probing the writer's cache.
    Streamed = 0,
    /// Through the shared slots with ordinary stores (lines stay in cache for the reader).
    Plain = 1,
    /// Straight between the ranks' own buffers with process_vm_readv/writev (Linux CMA): each
    /// rank pulls its part from every peer, reduces it and pushes the result back into each
    /// peer's buffer. One copy each way, no slots, two barriers per call.
    SingleCopy = 2,
};
inline constexpr int kCopyStrategies = 3;

/// "streamed", "plain", "single-copy".
std::string_view copy_strategy_name(CopyStrategy strategy);

/// The one strategy InitOptions::shm_copy fixes for every size; nullopt for ShmCopy::Auto.
std::optional<CopyStrategy> fixed_strategy(ShmCopy copy);

}  // namespace ptrun::ddp::detail
