#pragma once
/// Removing a run directory in one pass: every directory opened once and listed with getdents64
/// (std::filesystem::remove_all opens each one twice, a part of every launch's end); an empty
/// directory is removed without being opened.

#include <string>

namespace ptrun::launcher {

/// Removes `path` and everything below it without following symbolic links (a link is removed,
/// not what it names). Best effort: what cannot be removed stays, and nothing throws. Goes at
/// most 64 directories deep.
void remove_tree(const std::string& path) noexcept;

}  // namespace ptrun::launcher
