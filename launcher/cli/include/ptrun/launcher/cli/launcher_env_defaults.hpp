#pragma once
/// Zero configuration under any launcher: the options the user left out, filled in from the
/// launch environment ptrun runs in (SLURM, MPI, Flux, PBS, LSF's jsrun, Kubernetes). An explicit
/// flag or PET_ variable always wins. --launcher-env picks the environment (auto: the first found
/// in schedulers/reader.hpp's detection order; off: none).
///
/// Every environment, SLURM included, is read by its schedulers::Reader and filled from the
/// Topology by one path (src/environment_defaults.cpp); SLURM through apply_slurm_defaults
/// (slurm_defaults.hpp: its --slurm-mode, salloc's shell, c10d at the head host, Source::Slurm).
/// The others, each filled value Source::LauncherEnv with its variables:
/// Per-node mode (as many tasks as nodes: one ptrun per node spawns the node's workers; also
/// when --nproc-per-node N > 1 is given: then every task is an agent):
///   nnodes         the job's nodes (the tasks, with several per node)
///   node-rank      the node's index (else the task rank)
///   nproc-per-node the devices CUDA_VISIBLE_DEVICES shows, else 1
///   rdzv-id        "<env>-<job id>"
///   multi-node:    static rendezvous: master-addr/master-port = master host:port, node 0 hosts
///                  the store (as torchrun under Kubeflow), unless --rdzv-endpoint/-backend given
/// Per-rank mode (more tasks than nodes: the launcher started one task per rank): one worker per
///   ptrun (FixedPlacement: rank, local rank, sizes, node rank), rank 0 hosts the workers' store
///   at the master host:port. --slurm-mode per-node|per-rank overrides the detection here too.
/// Master host: the environment's (PBS_NODEFILE's and LSF's first host, JobSet's first pod,
/// MASTER_ADDR), else this host on a single node; a multi-node job without one is refused.
/// Port: MASTER_PORT, else 29500 + the job id % 2000 (a non-numeric id hashed).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// Reads the host file at `path`, which variable `var` names: its text, or throws UsageError
/// naming both.
using ReadHostFile = std::function<std::string(std::string_view var, const std::string& path)>;

/// A launch completed from its environment.
struct LaunchDefaults {
    /// The options with the environment's values filled in; "launcher-env" holds the environment
    /// used ("off" when none), "slurm-mode" SLURM's mode.
    LaunchOptions options;
    std::optional<FixedPlacement> placement;  ///< per-rank mode only
    std::vector<std::string> warnings;        ///< for main to log
};

/// Fills the options of `options` still Source::Default from the environment --launcher-env
/// picks in `env` (and the host file it names, read through `read_host_file`). Pure but for
/// `read_host_file`. Throws UsageError naming the variable and its value for a malformed or
/// contradicting value, or naming the option for an explicit one the mode cannot honour.
LaunchDefaults apply_launcher_env(LaunchOptions options, const env::EnvMap& env,
                                  const ReadHostFile& read_host_file);

/// The real ReadHostFile: at most schedulers::kMaxHostFileBytes of a regular file; UsageError
/// naming the variable and path when it cannot be read or is larger.
std::string read_host_file(std::string_view var, const std::string& path);

}  // namespace ptrun::launcher
