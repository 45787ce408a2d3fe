#pragma once
/// ptrun's version, from the CMake project.

namespace ptrun::launcher {
inline constexpr const char* kVersion = PTRUN_VERSION;
}
