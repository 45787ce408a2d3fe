#include "ptrun/env/env_map.hpp"

#include <charconv>
#include <cstdlib>

namespace ptrun::env {

std::optional<std::string> lookup(const EnvMap& env, std::string_view name) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<bool> parse_bool(std::string_view text) {
    if (text == "1" || text == "true" || text == "True" || text == "yes") return true;
    if (text == "0" || text == "false" || text == "False" || text == "no") return false;
    return std::nullopt;
}

std::optional<double> parse_seconds(std::string_view text) {
    if (text.empty()) return std::nullopt;
    const std::string whole(text);
    char* end = nullptr;
    const double v = std::strtod(whole.c_str(), &end);
    if (*end != '\0' || !(v >= 0) || v > 1e7) return std::nullopt;
    return v;
}

std::optional<std::int64_t> lookup_int(const EnvMap& env, std::string_view name, std::int64_t min,
                                       std::int64_t max) {
    auto raw = lookup(env, name);
    if (!raw) return std::nullopt;
    auto value = parse_int(*raw);
    if (!value || *value < min || *value > max) {
        throw ParseError(std::string(name) + "='" + *raw + "': expected an integer from " +
                         std::to_string(min) + " to " + std::to_string(max));
    }
    return value;
}

EnvMap from_environ(const char* const* environ_block) {
    EnvMap env;
    for (auto entry = environ_block; entry && *entry; ++entry) {
        std::string_view kv(*entry);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    return env;
}

}  // namespace ptrun::env
