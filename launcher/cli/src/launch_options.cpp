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
    throw UsageError(as_given(key, raw) + ": expected 1/true/yes or 0/false/no");
}

std::string as_given(Option key, const RawValue& raw) {
    std::string text = flag_text(key) + " '" + raw.value + "'";
    if (raw.source != Source::PetEnv) return text;
    return text + " (from " + (raw.origin.empty() ? std::string("PET_ environment") : raw.origin) +
           ")";
}

}  // namespace ptrun::launcher
