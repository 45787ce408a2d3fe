#pragma once
/// Bootstrapping the cpu backend through the job's store.

#include <chrono>
#include <memory>
#include <optional>

#include "copy_strategy.hpp"
#include "failure_board.hpp"
#include "heartbeat_ptr.hpp"
#include "ptrun/ddp/init.hpp"
#include "ptrun/rendezvous/store.hpp"

namespace ptrun::ddp::detail {

/// Builds a CpuProcessGroup for `context` using `store` (already namespaced for this group):
/// every rank publishes (node, pid); each node's leader (its lowest rank) creates the shared
/// segment and, with several nodes, the leaders link into a TCP ring through addresses
/// published in the store; after a store barrier the segment's name is unlinked. Leaders of a
/// multi-node group keep `board` for their ring (others drop it). `shm_copy` fixes the node's
/// copy strategy (nullopt: tuned); the leader records it in the segment and every other local
/// rank must have asked for the same. Blocks at most `timeout`; throws CollectiveError /
/// CollectiveTimeout. The group beats `heartbeat` (when set) on every completed collective.
std::unique_ptr<ProcessGroup> bootstrap_cpu_group(const RunContext& context, rdzv::Store& store,
                                                  std::chrono::milliseconds timeout,
                                                  std::optional<CopyStrategy> shm_copy = {},
                                                  FailureBoard board = {},
                                                  HeartbeatPtr heartbeat = {});

}  // namespace ptrun::ddp::detail
