#pragma once
/// argv/envp for exec-family calls from strings (header-only, ptrun::sys).

#include <string>
#include <vector>

namespace ptrun::sys {

/// A NULL-terminated char* array over `strings`, which must outlive it (and not change size).
inline std::vector<char*> c_array(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

/// A NULL-terminated char* array over const `strings` (exec-family calls do not write to them),
/// which must outlive it.
inline std::vector<char*> c_array(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

/// An environment for execve in one buffer: "NAME=value\0" for each (name, value) of a map.
struct EnvBlock {
    std::string text;
    std::vector<char*> pointers;  ///< into `text`, NULL-terminated: execve's envp
};

/// `vars` (any map of string names to string values) as an EnvBlock: one buffer for every
/// variable, not one string each.
template <class Map>
EnvBlock env_block(const Map& vars) {
    EnvBlock out;
    std::vector<std::size_t> starts;
    starts.reserve(vars.size());
    std::size_t size = 0;
    for (const auto& [name, value] : vars) size += name.size() + value.size() + 2;
    out.text.reserve(size);
    for (const auto& [name, value] : vars) {
        starts.push_back(out.text.size());
        out.text.append(name).append(1, '=').append(value).append(1, '\0');
    }
    out.pointers.reserve(starts.size() + 1);
    for (auto at : starts) out.pointers.push_back(out.text.data() + at);
    out.pointers.push_back(nullptr);
    return out;
}

}  // namespace ptrun::sys
