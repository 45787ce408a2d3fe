#include "ptrun/launcher/launch_plan.hpp"

#include <chrono>
#include <string>

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

}  // namespace ptrun::launcher
