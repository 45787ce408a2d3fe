#pragma once
/// Zero-configuration `srun ptrun train.py`: the options the user left out, filled in from the
/// SLURM job ptrun runs in. An explicit flag or PET_ variable always wins; every filled value gets
/// Source::Slurm and the variables it came from, for `--explain`.
///
/// Per-node mode (one task per node; ptrun spawns the node's workers):
///   nnodes         nodes in the step (SLURM_STEP_NUM_NODES); 1 in a batch script outside srun
///   node-rank      SLURM_NODEID
///   nproc-per-node SLURM_GPUS_ON_NODE, else the devices in CUDA_VISIBLE_DEVICES, else 1
///   rdzv-backend   c10d
///   rdzv-endpoint  first host of the step node list : port
///   rdzv-id        slurm-<SLURM_JOB_ID>.<SLURM_STEP_ID>
/// Per-rank mode (more tasks than nodes: SLURM started one task per rank): one worker per ptrun,
///   ranks from SLURM_PROCID / SLURM_LOCALID / SLURM_NODEID (FixedPlacement), the store at
///   master-addr = first host of the step node list, master-port = port (or --rdzv-endpoint's).
/// port = PTRUN_SLURM_PORT if set, else 29500 + SLURM_JOB_ID % 2000 (slurm::derive_port).
/// With --standalone only nproc-per-node is inferred.
/// The job is read by the schedulers' SLURM reader and filled by the path every launch
/// environment takes (environment_defaults.cpp), in SLURM's dialect (env_dialect.cpp).

#include <optional>
#include <string>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// The variable that replaces the derived SLURM port (1..65535).
inline constexpr const char* kSlurmPortVar = "PTRUN_SLURM_PORT";

/// A launch completed from SLURM.
struct SlurmDefaults {
    /// The options with SLURM values filled in; "slurm-mode" holds the mode used: off, per-node
    /// or per-rank (Source::Slurm with the reason when it was detected).
    LaunchOptions options;
    std::optional<FixedPlacement> placement;  ///< per-rank mode only
    std::vector<std::string> warnings;        ///< for main to log, e.g. salloc's login shell
};

/// Fills every option of `options` that is still Source::Default from the SLURM job in `env`
/// (nothing when SLURM_JOB_ID is unset or --slurm-mode off). Pure. Throws UsageError naming the
/// variable and its value for a malformed SLURM value, and naming the option for an explicit
/// one that cannot work in the mode (e.g. --nproc-per-node 4 in per-rank mode).
SlurmDefaults apply_slurm_defaults(LaunchOptions options, const env::EnvMap& env);

}  // namespace ptrun::launcher
