#pragma once
/// The launch environments ptrun reads (--launcher-env): which system started this process.

#include <optional>
#include <string_view>

namespace ptrun::schedulers {

/// Slurm: srun. Mpi: Open MPI's mpirun/prterun, MPICH's Hydra, Intel MPI. Flux: flux run. Pbs:
/// PBS Pro/OpenPBS/Torque (the job script, pbsdsh). Lsf: LSF's jsrun. K8s: Kubernetes (Kubeflow's
/// PyTorchJob, an indexed Job, JobSet).
enum class LauncherKind { Slurm, Mpi, Flux, Pbs, Lsf, K8s };

/// The spelling --launcher-env takes: "slurm", "mpi", "flux", "pbs", "lsf", "k8s".
std::string_view launcher_kind_name(LauncherKind kind);

/// The system's name as a user knows it, for messages: "SLURM", "MPI", "Flux", "PBS", "LSF",
/// "Kubernetes".
std::string_view launcher_kind_title(LauncherKind kind);

/// The kind `name` spells (launcher_kind_name's spellings), or nullopt.
std::optional<LauncherKind> parse_launcher_kind(std::string_view name);

}  // namespace ptrun::schedulers
