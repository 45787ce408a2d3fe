#include "ptrun/launcher/cli/slurm_mode.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

TEST_CASE("slurm mode: every name round trips", "[launcher][slurm]") {
    for (auto mode : {SlurmMode::Auto, SlurmMode::PerNode, SlurmMode::PerRank, SlurmMode::Off}) {
        const RawValue raw{std::string(slurm_mode_name(mode)), Source::Flag, {}};
        CHECK(parse_slurm_mode(raw) == mode);
    }
    CHECK(slurm_mode_name(SlurmMode::PerNode) == "per-node");
    CHECK(slurm_mode_name(SlurmMode::PerRank) == "per-rank");
}

TEST_CASE("slurm mode: others are refused naming the value and the accepted ones",
          "[launcher][slurm]") {
    CHECK_THROWS_AS(parse_slurm_mode({"rank", Source::Flag, {}}), UsageError);
    CHECK_THROWS_WITH(parse_slurm_mode({"Per-Node", Source::Flag, {}}),
                      "--slurm-mode 'Per-Node': expected auto, per-node, per-rank or off");
    CHECK_THROWS_WITH(
        parse_slurm_mode({"", Source::PetEnv, {}}),
        "--slurm-mode '' (from PET_ environment): expected auto, per-node, per-rank or off");
}
