#include "ptrun/launcher/launch_options.hpp"

#include <stdexcept>

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
    if (v.empty() || v == "0" || v == "false" || v == "False" || v == "no") return false;
    if (v == "1" || v == "true" || v == "True" || v == "yes") return true;
    throw UsageError((raw.source == Source::PetEnv ? "PET_ variable for --" : "--") +
                     std::string(name) + " '" + v + "': expected 1/true/yes or 0/false/no");
}

}  // namespace ptrun::launcher
