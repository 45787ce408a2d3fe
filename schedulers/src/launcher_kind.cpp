#include "ptrun/schedulers/launcher_kind.hpp"

#include <array>
#include <tuple>

namespace ptrun::schedulers {
namespace {

/// Every kind with its spelling and title: the one place that spells them.
constexpr std::array<std::tuple<LauncherKind, std::string_view, std::string_view>, 6> kKinds{{
    {LauncherKind::Slurm, "slurm", "SLURM"},
    {LauncherKind::Mpi, "mpi", "MPI"},
    {LauncherKind::Flux, "flux", "Flux"},
    {LauncherKind::Pbs, "pbs", "PBS"},
    {LauncherKind::Lsf, "lsf", "LSF"},
    {LauncherKind::K8s, "k8s", "Kubernetes"},
}};

}  // namespace

std::string_view launcher_kind_name(LauncherKind kind) {
    for (const auto& [k, name, title] : kKinds) {
        if (k == kind) return name;
    }
    return "slurm";  // not reached: kKinds has every enumerator
}

std::string_view launcher_kind_title(LauncherKind kind) {
    for (const auto& [k, name, title] : kKinds) {
        if (k == kind) return title;
    }
    return "SLURM";  // not reached
}

std::optional<LauncherKind> parse_launcher_kind(std::string_view name) {
    for (const auto& [k, spelled, title] : kKinds) {
        if (spelled == name) return k;
    }
    return std::nullopt;
}

}  // namespace ptrun::schedulers
