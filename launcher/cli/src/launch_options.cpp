#include "ptrun/launcher/cli/launch_options.hpp"

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {

LaunchOptions::LaunchOptions() {
    for (const auto& spec : option_table())
        at(spec.key) = RawValue{std::string(spec.fallback), Source::Default, {}};
}

bool LaunchOptions::flag(Option key) const {
    const auto& raw = at(key);
    const auto& v = raw.value;
    if (v.empty()) return false;
    if (auto b = env::parse_bool(v)) return *b;
    throw UsageError((raw.source == Source::PetEnv ? "PET_ variable for " : "") + flag_text(key) +
                     " '" + v + "': expected 1/true/yes or 0/false/no");
}

std::string as_given(Option key, const RawValue& raw) {
    std::string text = flag_text(key) + " '" + raw.value + "'";
    return raw.source == Source::PetEnv ? text + " (from PET_ environment)" : text;
}

}  // namespace ptrun::launcher
