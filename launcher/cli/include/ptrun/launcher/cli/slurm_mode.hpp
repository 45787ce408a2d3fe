#pragma once
/// --slurm-mode: how ptrun reads the SLURM step it runs in.

#include <string>
#include <string_view>

#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// Auto: detect per step (slurm_defaults.hpp). PerNode: one task per node, ptrun spawns the
/// node's workers. PerRank: SLURM started one task per rank, each ptrun runs one worker. Off:
/// ignore SLURM.
enum class SlurmMode { Auto, PerNode, PerRank, Off };

/// The mode's name as the user spells it: "auto", "per-node", "per-rank" or "off".
std::string_view slurm_mode_name(SlurmMode mode);

/// The mode --slurm-mode's `raw` value names. Throws UsageError naming the value and the accepted
/// ones for anything else.
SlurmMode parse_slurm_mode(const RawValue& raw);

/// Records in `options` the SLURM mode used: its name replaces a given value ("auto"), or becomes
/// a detected one (Source::Slurm, origin `why`).
void record_slurm_mode(LaunchOptions& options, SlurmMode mode, std::string why);

}  // namespace ptrun::launcher
