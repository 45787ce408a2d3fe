#pragma once
/// The exit barrier of one-task-per-rank mode. The workers' store lives in one task's ptrun (the
/// FixedPlacement's host), so that task must not take it away while other ranks still use it:
/// torchrun's exit barrier, across SLURM tasks instead of nodes.

#include <chrono>
#include <memory>

#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

/// How long the store host waits for the other tasks' workers to end (torchrun's default).
inline constexpr std::chrono::milliseconds kExitBarrierTimeout{300'000};

/// Call once this task's worker has ended with `exit_code`. A task without the store counts itself
/// out (best effort: a few seconds at most, nothing when the store is gone). The store host, when
/// its own worker succeeded, blocks until every other task has counted out, at most `timeout`
/// (a warning then); when its worker failed, at most 2 s (the others read the job's root cause
/// there: root_cause_claim.hpp). Never throws; no-op for a job of
/// one rank or without a store port.
void placement_exit_barrier(const LaunchConfig& config, const FixedPlacement& p, int exit_code,
                            const std::shared_ptr<spdlog::logger>& log,
                            std::chrono::milliseconds timeout = kExitBarrierTimeout);

/// --requeue after the workers exited on --checkpoint-signal, in place of placement_exit_barrier:
/// a task without the store counts itself out; the store host (the task that requeues) blocks
/// until every other task has, whatever its own exit code, at most `timeout`, since a requeue
/// would kill a rank still writing its part of the checkpoint. Says what it waited for. Never
/// throws.
void placement_checkpoint_barrier(const LaunchConfig& config, const FixedPlacement& p,
                                  const std::shared_ptr<spdlog::logger>& log,
                                  std::chrono::milliseconds timeout);

}  // namespace ptrun::launcher
