#include "ptrun/launcher/plan/launch_plan.hpp"

#include <catch2/catch.hpp>

#include "../slurm/env_columns.hpp"
#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;
namespace cols = ptrun::slurm::test_env;

namespace {

LaunchOptions options_for(std::vector<std::string> args) {
    args.push_back("train");
    return std::get<LaunchOptions>(parse_command_line(args, {}));
}

}  // namespace

TEST_CASE("resolve_launch: the straggler notice completes the configuration",
          "[launcher][config]") {
    auto options = options_for({});
    auto plain = resolve_launch(options, {}, {});
    CHECK(plain.straggler_notice == std::chrono::seconds(300));
    FixedPlacement placement;
    placement.rank = 3;
    placement.world_size = 4;
    auto per_rank = make_launch_plan(options, placement, {}, {{"PTRUN_STRAGGLER_NOTICE", "7"}});
    REQUIRE(std::holds_alternative<PerRankLaunch>(per_rank));
    CHECK(std::get<PerRankLaunch>(per_rank).placement == placement);
    CHECK(config_of(per_rank).straggler_notice == std::chrono::seconds(7));
    CHECK_THROWS_AS(resolve_launch(options, {}, {{"PTRUN_STRAGGLER_NOTICE", "0"}}), UsageError);
    CHECK_THROWS_WITH(
        resolve_launch(options, {}, {{"PTRUN_STRAGGLER_NOTICE", "soon"}}),
        Catch::Contains("PTRUN_STRAGGLER_NOTICE='soon'") && Catch::EndsWith(" (seconds)"));
}

TEST_CASE("make_launch_plan: single node or elastic or per rank from the options and SLURM",
          "[launcher][config]") {
    HostFacts host;
    host.random_id = "1234abcd";
    auto plan_in = [&host](const ptrun::env::EnvMap& env, std::vector<std::string> args = {}) {
        args.push_back("train");
        auto d = apply_slurm_defaults(std::get<LaunchOptions>(parse_command_line(args, env)), env);
        return make_launch_plan(d.options, d.placement, host, env);
    };
    auto single = plan_in({});
    REQUIRE(std::holds_alternative<SingleNodeLaunch>(single));
    CHECK_FALSE(config_of(single).multi_node());

    auto elastic = plan_in({}, {"--nnodes", "1:3", "--rdzv-endpoint", "head:29400"});
    REQUIRE(std::holds_alternative<ElasticLaunch>(elastic));
    CHECK(std::get<ElasticLaunch>(elastic).random_id == "1234abcd");
    CHECK(config_of(elastic).rendezvous_store.host == "head");
    // srun -N2 --ntasks-per-node=1: one agent per node, elastic from SLURM's topology.
    REQUIRE(std::holds_alternative<ElasticLaunch>(plan_in(cols::column_C())));

    // sbatch -N2 --ntasks-per-node=2, task 3: SLURM placed the rank; one worker, no rendezvous.
    auto per_rank = plan_in(cols::column_E());
    REQUIRE(std::holds_alternative<PerRankLaunch>(per_rank));
    const auto& fixed = std::get<PerRankLaunch>(per_rank).placement;
    CHECK(fixed.rank == 3);
    CHECK(fixed.world_size == 4);
    CHECK(config_of(per_rank).nproc_per_node == 1);
    // --slurm-mode per-node turns the same task into an elastic agent.
    CHECK(std::holds_alternative<ElasticLaunch>(
        plan_in(cols::column_E(), {"--slurm-mode", "per-node"})));
}

TEST_CASE("placement options are refused with one SLURM task per rank", "[launcher][config]") {
    auto refused = [](std::vector<std::string> args) {
        return make_launch_plan(options_for(std::move(args)), FixedPlacement{}, {}, {});
    };
    CHECK_THROWS_WITH(refused({"--numa-binding", "node"}),
                      Catch::Contains("--numa-binding with one SLURM task per rank"));
    CHECK_THROWS_WITH(refused({"--virtual-local-rank"}),
                      Catch::Contains("--virtual-local-rank with one SLURM task per rank"));
}
