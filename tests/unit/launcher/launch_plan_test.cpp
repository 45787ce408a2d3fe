#include "ptrun/launcher/launch_plan.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli.hpp"
#include "ptrun/launcher/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

LaunchOptions options_for(std::vector<std::string> args) {
    args.push_back("train");
    return std::get<LaunchOptions>(parse_command_line(args, {}));
}

}  // namespace

TEST_CASE("resolve_launch: the placement and the straggler notice complete the configuration",
          "[launcher][config]") {
    auto options = options_for({});
    auto plain = resolve_launch(options, std::nullopt, {}, {});
    CHECK_FALSE(plain.fixed_placement);
    CHECK(plain.straggler_notice == std::chrono::seconds(300));
    FixedPlacement placement;
    placement.rank = 3;
    placement.world_size = 4;
    auto per_rank = resolve_launch(options, placement, {}, {{"PTRUN_STRAGGLER_NOTICE", "7"}});
    CHECK(per_rank.fixed_placement == placement);
    CHECK(per_rank.straggler_notice == std::chrono::seconds(7));
    CHECK_THROWS_AS(resolve_launch(options, std::nullopt, {}, {{"PTRUN_STRAGGLER_NOTICE", "0"}}),
                    UsageError);
    CHECK_THROWS_WITH(
        resolve_launch(options, std::nullopt, {}, {{"PTRUN_STRAGGLER_NOTICE", "soon"}}),
        Catch::Contains("PTRUN_STRAGGLER_NOTICE='soon'") && Catch::EndsWith(" (seconds)"));
}
