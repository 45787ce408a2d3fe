#include "ptrun/launcher/hosts/remote_env.hpp"

#include <array>

#include "ptrun/launcher/cli/option.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

/// The options whose PET_ variables stay here: they would make each host a launcher again.
constexpr std::array kLauncherOnly{Option::Hosts,   Option::Hostfile,    Option::Include,
                                   Option::Exclude, Option::RemoteShell, Option::RemotePtrun,
                                   Option::Export,  Option::FromLauncher};

bool launcher_only(std::string_view name) {
    for (auto key : kLauncherOnly) {
        if (option_spec(key).pet == name) return true;
    }
    return false;
}

}  // namespace

bool variable_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

EnvPairs parse_env_file(std::string_view text, std::string_view path) {
    EnvPairs out;
    std::size_t number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        auto line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        auto first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#') continue;
        const auto eq = line.find('=');
        const auto name = eq == std::string_view::npos ? line : line.substr(0, eq);
        if (eq == std::string_view::npos || !variable_name(name)) {
            throw UsageError(std::string(path) + " line " + std::to_string(number) + ": '" +
                             printable(line.substr(0, 200)) +
                             "': expected NAME=VALUE (NAME of letters, digits and '_')");
        }
        out.emplace_back(std::string(name), std::string(line.substr(eq + 1)));
    }
    return out;
}

EnvPairs remote_env(const env::EnvMap& env, std::string_view exports, const EnvPairs& file) {
    EnvPairs out;
    for (const auto& [name, value] : env) {
        if (name.rfind("PET_", 0) == 0 && !launcher_only(name)) out.emplace_back(name, value);
    }
    std::size_t start = 0;
    while (!exports.empty() && start <= exports.size()) {
        auto end = exports.find(',', start);
        if (end == std::string_view::npos) end = exports.size();
        const auto name = exports.substr(start, end - start);
        start = end + 1;
        if (!variable_name(name)) {
            throw UsageError("--export '" + printable(exports.substr(0, 200)) + "': '" +
                             printable(name) + "' is not a variable name; expected VAR,VAR,...");
        }
        auto value = env::lookup(env, name);
        if (!value) {
            throw UsageError("--export: " + std::string(name) +
                             " is not set here; expected variables of this environment");
        }
        out.emplace_back(std::string(name), *value);
    }
    out.insert(out.end(), file.begin(), file.end());
    return out;
}

}  // namespace ptrun::launcher
