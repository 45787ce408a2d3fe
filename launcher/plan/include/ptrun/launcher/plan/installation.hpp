#pragma once
/// Where ptrun's own files lie beside its executable: the Python runner that starts Python
/// workers, and, for a ptrun installed from its wheel, the interpreter of that environment.

#include <string>

namespace ptrun::launcher {

/// ptrun's files found from its executable's directory EXE_DIR (the same layout in the build
/// tree, under `cmake --install` and in the wheel):
/// - EXE_DIR/../lib/ptrun/python/ptrun/_runner.py, the runner;
/// - EXE_DIR/../lib/ptrun/python/ptrun/WHEEL-INSTALL, written only by the wheel: then
///   EXE_DIR/python3 (the virtual environment's or conda's interpreter) runs Python workers.
struct Installation {
    std::string runner;      ///< the runner's absolute path; "" when it is not there
    std::string own_python;  ///< a wheel install's EXE_DIR/python3 when executable, else ""
};

/// The installation of the executable at `exe_path` (an absolute path, /proc/self/exe's target).
Installation find_installation(const std::string& exe_path);

/// The installation of the running ptrun (reads /proc/self/exe); empty when it cannot be read.
Installation this_installation();

}  // namespace ptrun::launcher
