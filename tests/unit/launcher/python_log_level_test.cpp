#include "ptrun/launcher/output/python_log_level.hpp"

#include <catch2/catch.hpp>

using ptrun::launcher::python_log_level;

TEST_CASE("LOGLEVEL takes Python's level names, in any case", "[launcher]") {
    CHECK(python_log_level("DEBUG") == spdlog::level::debug);
    CHECK(python_log_level("info") == spdlog::level::info);
    CHECK(python_log_level("Warning") == spdlog::level::warn);
    CHECK(python_log_level("WARN") == spdlog::level::warn);
    CHECK(python_log_level("ERROR") == spdlog::level::err);
    CHECK(python_log_level("CRITICAL") == spdlog::level::critical);
    CHECK(python_log_level("FATAL") == spdlog::level::critical);
    CHECK_FALSE(python_log_level("chatty"));
    CHECK_FALSE(python_log_level("20"));
    CHECK_FALSE(python_log_level(""));
}
