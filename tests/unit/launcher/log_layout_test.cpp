#include "ptrun/launcher/output/log_layout.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.hpp"

using namespace ptrun::launcher;
namespace fs = std::filesystem;

namespace {

/// Sets the umask for one scope (the test process only; restored at scope exit).
struct ScopedUmask {
    explicit ScopedUmask(mode_t mask) : old(::umask(mask)) {}
    ~ScopedUmask() { ::umask(old); }
    mode_t old;
};

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("log layout: a run directory gets mkdir's mode under the umask", "[launcher][logs]") {
    test::TempDir tmp;
    for (mode_t mask : {mode_t{022}, mode_t{027}, mode_t{077}}) {
        ScopedUmask scoped(mask);
        LogLayout layout((tmp.path / "logs").string(), "job", "node1.example", "", 2);
        CHECK(layout.prepare().empty());
        const auto run = layout.run_log_dir();
        REQUIRE_FALSE(run.empty());
        CHECK(fs::path(run).parent_path() == tmp.path / "logs");
        CHECK(mode_of(run) == (0755 & ~mask));
    }
}

TEST_CASE("log layout: runs of one job in the same second get directories of their own",
          "[launcher][logs]") {
    test::TempDir tmp;
    LogLayout first((tmp.path / "logs").string(), "job", "node1", "", 1);
    LogLayout second((tmp.path / "logs").string(), "job", "node1", "", 1);
    first.prepare();
    second.prepare();
    CHECK(first.run_log_dir() != second.run_log_dir());
    const auto name = fs::path(second.run_log_dir()).filename().string();
    CHECK(name.rfind("job_node1_", 0) == 0);
    for (char c : name.substr(name.size() - 6)) CHECK(std::isalnum(static_cast<unsigned char>(c)));
    CHECK(fs::read_symlink(tmp.path / "logs" / "latest").filename() == name);
}

TEST_CASE("log layout: a temporary error root a worker removed is made again for the next attempt",
          "[launcher][logs]") {
    LogLayout layout("", "job", "node1", "", 1);
    layout.begin_attempt(0, 0);
    const auto first = layout.error_dir(0);
    CHECK(fs::is_directory(first));
    const auto root = layout.temporary_error_root();
    REQUIRE_FALSE(root.empty());
    fs::remove_all(root);  // what a worker's `rm -rf /dev/shm/ptrun-*` does
    layout.begin_attempt(1, 0);
    const auto second = layout.error_dir(0);
    CHECK(fs::is_directory(second));
    CHECK(second.find("attempt_1") != std::string::npos);
    CHECK(mode_of(root) == 0700);
}

TEST_CASE("log layout: the temporary error root goes at exit, with what workers wrote in it",
          "[launcher][logs]") {
    std::string empty_root;
    {  // nothing written: its directories alone, two attempts of two workers
        LogLayout layout("", "job", "node1", "", 2);
        for (int attempt = 0; attempt < 2; ++attempt) {
            layout.begin_attempt(attempt, 0);
            CHECK(fs::is_directory(layout.error_dir(0)));
            CHECK(fs::is_directory(layout.error_dir(1)));
        }
        empty_root = layout.temporary_error_root();
        REQUIRE_FALSE(empty_root.empty());
    }
    CHECK_FALSE(fs::exists(empty_root));
    // A worker's error file, a directory of its own, and a worker's directory replaced by a link
    // to a directory outside the root: the root goes whole, the link's target stays.
    test::TempDir elsewhere;
    const auto outside = elsewhere.path / "kept";
    fs::create_directory(outside);
    std::string written_root;
    {
        LogLayout layout("", "job", "node1", "", 3);
        layout.begin_attempt(0, 0);
        const auto dir0 = layout.error_dir(0);
        const auto dir1 = layout.error_dir(1);
        const auto dir2 = layout.error_dir(2);
        std::ofstream(dir0 + "/error.json") << "{}";
        fs::create_directories(dir1 + "/cache/x");
        fs::remove(dir2);
        fs::create_directory_symlink(outside, dir2);
        written_root = layout.temporary_error_root();
    }
    CHECK_FALSE(fs::exists(written_root));
    CHECK(fs::is_directory(outside));
}
