#include "ptrun/launcher/plan/installation.hpp"

#include <unistd.h>

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
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return find_installation(exe.string());
}

}  // namespace ptrun::launcher
