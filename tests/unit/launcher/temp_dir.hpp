#pragma once
/// A private temporary directory for one test, removed with everything in it at scope exit.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace ptrun::launcher::test {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string pattern = std::filesystem::temp_directory_path() / "ptrun-unit-XXXXXX";
        path = ::mkdtemp(pattern.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

}  // namespace ptrun::launcher::test
