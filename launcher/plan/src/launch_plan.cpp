#include "ptrun/launcher/plan/launch_plan.hpp"

#include <chrono>
#include <string>
#include <variant>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/schedulers/launcher_kind.hpp"

namespace ptrun::launcher {

LaunchConfig resolve_launch(const LaunchOptions& opts, const HostFacts& host,
                            const env::EnvMap& env) {
    auto c = resolve(opts, host);
    try {
        if (auto s = env::lookup_int(env, "PTRUN_STRAGGLER_NOTICE", 1, 365L * 86'400)) {
            c.straggler_notice = std::chrono::seconds(*s);
        }
        if (auto s = env::lookup_int(env, "PTRUN_READY_DEADLINE", 1, 365L * 86'400)) {
            c.ready_deadline = std::chrono::seconds(*s);
        }
    } catch (const env::ParseError& e) {
        throw UsageError(std::string(e.what()) + " (seconds)");
    }
    return c;
}

LaunchPlan make_launch_plan(const LaunchOptions& opts, std::optional<FixedPlacement> placement,
                            const HostFacts& host, const env::EnvMap& env) {
    auto config = resolve_launch(opts, host, env);
    if (placement) {
        if (config.numa_binding || config.virtual_local_rank) {
            // Each task would place its one worker without knowing the node's other tasks.
            const std::string option =
                config.numa_binding ? "--numa-binding" : "--virtual-local-rank";
            const auto other = schedulers::parse_launcher_kind(opts.at(Option::LauncherEnv).value);
            if (other && *other != schedulers::LauncherKind::Slurm) {
                throw UsageError(option + " with one " +
                                 std::string(schedulers::launcher_kind_title(*other)) +
                                 " task per rank: each ptrun runs one worker and cannot place it "
                                 "among the node's others; let the launcher bind the tasks, or "
                                 "start one task per node");
            }
            throw UsageError(option +
                             " with one SLURM task per rank: each ptrun runs one worker and cannot "
                             "place it among the node's others; let SLURM place the tasks (srun "
                             "--cpu-bind, --gpus-per-task) or start one task per node");
        }
        return PerRankLaunch{std::move(config), std::move(*placement)};
    }
    if (config.multi_node()) return ElasticLaunch{std::move(config), host.random_id};
    return SingleNodeLaunch{std::move(config)};
}

const LaunchConfig& config_of(const LaunchPlan& plan) {
    return std::visit([](const auto& mode) -> const LaunchConfig& { return mode.config; }, plan);
}

}  // namespace ptrun::launcher
