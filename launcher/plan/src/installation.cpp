#include "ptrun/launcher/plan/installation.hpp"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <system_error>

namespace ptrun::launcher {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

}  // namespace

Installation find_installation(const std::string& exe_path) {
    Installation found;
    const fs::path bin = fs::path(exe_path).parent_path();
    const fs::path package = (bin / ".." / "lib" / "ptrun" / "python" / "ptrun").lexically_normal();
    if (is_file(package / "_runner.py")) found.runner = (package / "_runner.py").string();
    const fs::path python = bin / "python3";
    if (is_file(package / "WHEEL-INSTALL") && is_file(python) &&
        ::access(python.c_str(), X_OK) == 0) {
        found.own_python = python.string();
    }
    return found;
}

Installation this_installation() {
    char exe[PATH_MAX];  // readlink alone: read_symlink would lstat /proc/self/exe first
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe);
    if (n <= 0 || static_cast<std::size_t>(n) == sizeof exe) return {};
    return find_installation(std::string(exe, static_cast<std::size_t>(n)));
}

}  // namespace ptrun::launcher
