// remove_tree: a run directory with files, nested directories and a link goes in one call; what
// the link names outside it stays.
#include "ptrun/launcher/output/remove_tree.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"

using namespace ptrun::launcher;
namespace fs = std::filesystem;

TEST_CASE("remove_tree removes a tree and not what its links name", "[launcher][remove_tree]") {
    test::TempDir dir;
    const auto outside = dir.path / "outside";
    fs::create_directories(outside / "kept");
    std::ofstream(outside / "kept" / "file") << "x";
    const auto run = dir.path / "run";
    for (int rank = 0; rank < 40; ++rank) {  // more entries than one getdents64 buffer holds
        const auto rank_dir = run / "attempt_0" / std::to_string(rank);
        fs::create_directories(rank_dir / "deeper" / "still");
        std::ofstream(rank_dir / ("error_with_a_long_name_" + std::string(100, 'e') + ".json"))
            << "{}";
    }
    std::ofstream(run / "run.log") << "log";
    fs::create_directory_symlink(outside, run / "link");
    remove_tree(run.string());
    CHECK_FALSE(fs::exists(fs::symlink_status(run)));
    CHECK(fs::exists(outside / "kept" / "file"));
    remove_tree((dir.path / "absent").string());  // nothing there: nothing happens
    std::ofstream(dir.path / "plain") << "p";
    remove_tree((dir.path / "plain").string());  // a file: removed
    CHECK_FALSE(fs::exists(dir.path / "plain"));
}
