#pragma once
/// The line that ends a job stopped through --checkpoint-signal: which ranks exited on their own
/// within --checkpoint-grace and which ptrun had to stop after it.

#include <chrono>
#include <string>
#include <vector>

#include "ptrun/launcher/output/failure_report.hpp"

namespace ptrun::launcher {

/// "checkpoint signal SIGUSR1: exited within the grace (60 s, --checkpoint-grace): rank 0
/// (exit code 0); stopped by ptrun: rank 1 (signal 15 (SIGTERM))". A worker counts as stopped when
/// `stopped_by_ptrun` is set. Pure.
std::string format_checkpoint_report(const std::vector<WorkerEnd>& ends, int checkpoint_signal,
                                     std::chrono::milliseconds grace);

}  // namespace ptrun::launcher
