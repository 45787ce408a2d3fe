#include "ptrun/launcher/launch_plan.hpp"

#include <chrono>
#include <string>
#include <variant>

#include "ptrun/launcher/usage_error.hpp"

namespace ptrun::launcher {

LaunchConfig resolve_launch(const LaunchOptions& opts, std::optional<FixedPlacement> placement,
                            const HostFacts& host, const env::EnvMap& env) {
    auto c = resolve(opts, host);
    c.fixed_placement = std::move(placement);
    try {
        if (auto s = env::lookup_int(env, "PTRUN_STRAGGLER_NOTICE", 1, 365L * 86'400)) {
            c.straggler_notice = std::chrono::seconds(*s);
        }
    } catch (const env::ParseError& e) {
        throw UsageError(std::string(e.what()) + " (seconds)");
    }
    return c;
}

LaunchPlan make_launch_plan(const LaunchOptions& opts, std::optional<FixedPlacement> placement,
                            const HostFacts& host, const env::EnvMap& env) {
    auto config = resolve_launch(opts, std::move(placement), host, env);
    if (config.fixed_placement) return PerRankLaunch{std::move(config)};
    if (config.multi_node()) return ElasticLaunch{std::move(config), host.random_id};
    return SingleNodeLaunch{std::move(config)};
}

const LaunchConfig& config_of(const LaunchPlan& plan) {
    return std::visit([](const auto& mode) -> const LaunchConfig& { return mode.config; }, plan);
}

}  // namespace ptrun::launcher
