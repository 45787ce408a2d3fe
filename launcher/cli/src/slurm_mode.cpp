#include "ptrun/launcher/cli/slurm_mode.hpp"

#include <utility>
#include <array>

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

/// Every mode with its spelling: the one place that spells them.
constexpr std::array<std::pair<SlurmMode, std::string_view>, 4> kModes{{
    {SlurmMode::Auto, "auto"},
    {SlurmMode::PerNode, "per-node"},
    {SlurmMode::PerRank, "per-rank"},
    {SlurmMode::Off, "off"},
}};

}  // namespace

std::string_view slurm_mode_name(SlurmMode mode) {
    for (const auto& [candidate, name] : kModes) {
        if (candidate == mode) return name;
    }
    return "auto";  // not reached: kModes has every enumerator
}

SlurmMode parse_slurm_mode(const RawValue& raw) {
    for (const auto& [mode, name] : kModes) {
        if (raw.value == name) return mode;
    }
    throw UsageError(as_given(Option::SlurmMode, raw) +
                     ": expected auto, per-node, per-rank or off");
}

void record_slurm_mode(LaunchOptions& options, SlurmMode mode, std::string why) {
    auto& raw = options.at(Option::SlurmMode);
    if (options.given(Option::SlurmMode)) {
        raw.value = slurm_mode_name(mode);
        return;
    }
    raw = RawValue{std::string(slurm_mode_name(mode)), Source::Slurm, std::move(why)};
}

}  // namespace ptrun::launcher
