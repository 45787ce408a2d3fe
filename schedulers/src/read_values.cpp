#include "read_values.hpp"

namespace ptrun::schedulers::detail {

std::optional<std::string> if_set(const env::EnvMap& env, std::string_view name) {
    if (env.find(name) == env.end()) return std::nullopt;
    return std::string(name);
}

std::optional<Sourced<int>> optional_int(const env::EnvMap& env, std::string_view name, int min,
                                         int max) {
    auto v = env::lookup_int(env, name, min, max);
    if (!v) return std::nullopt;
    return Sourced<int>{static_cast<int>(*v), std::string(name)};
}

Sourced<int> required_int(const env::EnvMap& env, std::string_view name, int min, int max,
                          std::string_view why) {
    auto v = optional_int(env, name, min, max);
    if (!v) throw env::ParseError(std::string(name) + " unset: " + std::string(why));
    return *v;
}

std::optional<Sourced<std::string>> optional_text(const env::EnvMap& env, std::string_view name,
                                                  std::size_t max_bytes) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    if (it->second.size() > max_bytes) {
        throw env::ParseError(std::string(name) + ": " + std::to_string(it->second.size()) +
                              " bytes: expected at most " + std::to_string(max_bytes));
    }
    return Sourced<std::string>{it->second, std::string(name)};
}

std::optional<Sourced<std::string>> optional_host(const env::EnvMap& env, std::string_view name) {
    auto v = optional_text(env, name);
    if (v) check_host_name(v->value, shown(env, name));
    return v;
}

void check_host_name(const std::string& host, const std::string& subject) {
    if (host.find_first_of(" \t\r\n#") != std::string::npos) {
        throw env::ParseError(subject + ": expected one host name or address");
    }
    parse_host_file(host, subject);  // the host files' rules for a name
}

Sourced<int> nodes_from_sizes(const Sourced<int>& world, const Sourced<int>& local) {
    if (local.value < 1 || world.value % local.value != 0) {
        throw env::ParseError(local.origin + "=" + std::to_string(local.value) +
                              " does not divide " + world.origin + "=" +
                              std::to_string(world.value) +
                              ": the nodes run different numbers of tasks, so the node count "
                              "cannot be told; start the same number on every node");
    }
    return {world.value / local.value, world.origin + " / " + local.origin};
}

std::string shown(const env::EnvMap& env, std::string_view name) {
    auto it = env.find(name);
    std::string value = it == env.end() ? std::string() : it->second.substr(0, 64);
    for (auto& c : value) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    if (it != env.end() && it->second.size() > 64) value += "...";
    return std::string(name) + "='" + value + "'";
}

}  // namespace ptrun::schedulers::detail
