#pragma once
// Local ranks of a shared-memory group as threads of the test process (gloo's spawnThreads).

#include <cstddef>
#include <cstdint>
#include <functional>

#include "shm_collectives.hpp"

namespace ptrun::ddp::test {

/// Runs `n` local ranks as threads of this process (same pid), each with its own mapping of one
/// fresh segment of `slot_bytes` slots whose header sets `copy_mode` (0: tuned); under
/// ThreadSanitizer all share one mapping, so that TSan sees their accesses. `body` gets its
/// rank's collectives and that rank's board, seen through a mapping of its own (under TSan, the
/// shared one). The first exception a rank throws is rethrown here; the segment's name is gone
/// before any rank runs.
void run_shm_ranks(int n, std::size_t slot_bytes, std::uint32_t copy_mode,
                   const std::function<void(detail::ShmCollectives&, detail::RankBoard&)>& body);

}  // namespace ptrun::ddp::test
