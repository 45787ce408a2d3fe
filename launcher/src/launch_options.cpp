#include "ptrun/launcher/launch_options.hpp"

#include <stdexcept>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/usage_error.hpp"

namespace ptrun::launcher {

const RawValue& LaunchOptions::at(std::string_view name) const {
    auto it = values.find(name);
    if (it == values.end()) throw std::out_of_range("unknown option " + std::string(name));
    return it->second;
}

bool LaunchOptions::flag(std::string_view name) const {
    const auto& raw = at(name);
    const auto& v = raw.value;
    if (v.empty()) return false;
    if (auto b = env::parse_bool(v)) return *b;
    throw UsageError((raw.source == Source::PetEnv ? "PET_ variable for --" : "--") +
                     std::string(name) + " '" + v + "': expected 1/true/yes or 0/false/no");
}

}  // namespace ptrun::launcher
