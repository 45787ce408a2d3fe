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

}  // namespace ptrun::sys
