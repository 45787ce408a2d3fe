#include "ptrun/launcher/output/python_log_level.hpp"

#include <utility>
#include <array>
#include <cctype>
#include <string>

namespace ptrun::launcher {

std::optional<spdlog::level::level_enum> python_log_level(std::string_view name) {
    static constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 7> kNames{{
        {"DEBUG", spdlog::level::debug},
        {"INFO", spdlog::level::info},
        {"WARNING", spdlog::level::warn},
        {"WARN", spdlog::level::warn},
        {"ERROR", spdlog::level::err},
        {"CRITICAL", spdlog::level::critical},
        {"FATAL", spdlog::level::critical},
    }};
    std::string upper(name);
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& [text, level] : kNames) {
        if (upper == text) return level;
    }
    return std::nullopt;
}

}  // namespace ptrun::launcher
