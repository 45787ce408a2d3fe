#include "ptrun/launcher/output/duration_text.hpp"

namespace ptrun::launcher {

std::string seconds_text(std::chrono::milliseconds d) {
    const auto centis = (d.count() + 5) / 10;
    std::string text = std::to_string(centis / 100);
    if (auto frac = centis % 100; frac != 0) {
        text += frac % 10 == 0 ? "." + std::to_string(frac / 10)
                               : (frac < 10 ? ".0" : ".") + std::to_string(frac);
    }
    return text + " s";
}

std::string elapsed_text(std::chrono::seconds d) {
    const auto s = d.count();
    if (s < 60) return std::to_string(s) + " s";
    if (s < 3600) return std::to_string(s / 60) + " min";
    auto text = std::to_string(s / 3600) + " h";
    if (auto min = s % 3600 / 60; min != 0) text += " " + std::to_string(min) + " min";
    return text;
}

}  // namespace ptrun::launcher
