#pragma once
/// torchrun's LOGLEVEL: the level of its own log lines, a Python logging level name.

#include <spdlog/common.h>

#include <optional>
#include <string_view>

namespace ptrun::launcher {

/// The spdlog level of Python logging level `name` (DEBUG, INFO, WARNING or WARN, ERROR,
/// CRITICAL or FATAL; any case); nullopt for anything else.
std::optional<spdlog::level::level_enum> python_log_level(std::string_view name);

}  // namespace ptrun::launcher
