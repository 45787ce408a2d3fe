#include "ptrun/ddp/checkpoint.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>

using namespace ptrun::ddp;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under $TMPDIR, removed with the object.
struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "ptrun-ckpt-test-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() { fs::remove_all(path); }
};

Checkpoint sample(std::uint64_t step) {
    Checkpoint c;
    c.step = step;
    c.epoch = step / 10;
    c.buffers = {{"w", {1.5f, -2.25f, 3e-8f}}, {"empty", {}}, {"b", {0.125f}}};
    return c;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

TEST_CASE("checkpoint round-trips step, epoch and named buffers", "[ddp][checkpoint]") {
    TempDir dir;
    write_checkpoint(dir.path / "a.bin", sample(37));
    auto c = read_checkpoint(dir.path / "a.bin");
    CHECK(c.step == 37);
    CHECK(c.epoch == 3);
    REQUIRE(c.buffers.size() == 3);
    CHECK(c.buffer("w") == std::vector<float>{1.5f, -2.25f, 3e-8f});
    CHECK(c.buffer("empty").empty());
    CHECK(c.buffers[2].first == "b");
    CHECK_THROWS_AS(c.buffer("nope"), CheckpointError);
}

TEST_CASE("checkpoint write leaves no temporary file behind", "[ddp][checkpoint]") {
    TempDir dir;
    write_checkpoint(dir.path / "a.bin", sample(1));
    write_checkpoint(dir.path / "a.bin", sample(2));  // replaces atomically
    int files = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(dir.path)) ++files;
    CHECK(files == 1);
    CHECK(read_checkpoint(dir.path / "a.bin").step == 2);
}

TEST_CASE("checkpoint truncated at any length is a clear error", "[ddp][checkpoint]") {
    TempDir dir;
    write_checkpoint(dir.path / "a.bin", sample(5));
    const auto bytes = slurp(dir.path / "a.bin");
    for (std::size_t len = 0; len < bytes.size(); ++len) {
        spit(dir.path / "t.bin", bytes.substr(0, len));
        REQUIRE_THROWS_AS(read_checkpoint(dir.path / "t.bin"), CheckpointError);
    }
    spit(dir.path / "t.bin", bytes.substr(0, bytes.size() - 3));
    CHECK_THROWS_WITH(read_checkpoint(dir.path / "t.bin"), Catch::Contains("t.bin"));
}

TEST_CASE("checkpoint with a flipped byte fails its checksum", "[ddp][checkpoint]") {
    TempDir dir;
    write_checkpoint(dir.path / "a.bin", sample(5));
    auto bytes = slurp(dir.path / "a.bin");
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
    spit(dir.path / "c.bin", bytes);
    CHECK_THROWS_WITH(read_checkpoint(dir.path / "c.bin"), Catch::Contains("checksum mismatch"));
}

TEST_CASE("checkpoint rejects foreign files and other versions", "[ddp][checkpoint]") {
    TempDir dir;
    spit(dir.path / "x.bin", std::string(64, 'x'));
    CHECK_THROWS_WITH(read_checkpoint(dir.path / "x.bin"), Catch::Contains("bad magic"));
    write_checkpoint(dir.path / "a.bin", sample(5));
    auto bytes = slurp(dir.path / "a.bin");
    bytes[8] = 9;  // version field
    spit(dir.path / "v.bin", bytes);
    CHECK_THROWS_WITH(read_checkpoint(dir.path / "v.bin"), Catch::Contains("version 9"));
    CHECK_THROWS_WITH(read_checkpoint(dir.path / "missing.bin"), Catch::Contains("cannot open"));
}

TEST_CASE("checkpoint dir loads the highest step and keeps the newest few", "[ddp][checkpoint]") {
    TempDir dir;
    CheckpointDir ckpts(dir.path / "run", 0, 2);
    CHECK_FALSE(ckpts.load_latest().has_value());  // the directory does not exist yet
    for (std::uint64_t step : {3u, 12u, 7u, 20u}) ckpts.save(sample(step));
    auto files = ckpts.list();
    REQUIRE(files.size() == 2);
    CHECK(files[0].filename() == "ckpt-000000000012.bin");
    CHECK(ckpts.load_latest()->step == 20);
}

TEST_CASE("checkpoint dir writes only on rank 0", "[ddp][checkpoint]") {
    TempDir dir;
    CheckpointDir other(dir.path, 1);
    CHECK_FALSE(other.save(sample(1)).has_value());
    CHECK(other.list().empty());
    CheckpointDir zero(dir.path, 0);
    CHECK(zero.save(sample(1)).has_value());
    CHECK(other.load_latest()->step == 1);
}

TEST_CASE("checkpoint dir reports a corrupt latest file, ignores and clears temp files",
          "[ddp][checkpoint]") {
    TempDir dir;
    CheckpointDir ckpts(dir.path, 0);
    ckpts.save(sample(1));
    spit(dir.path / ".ckpt-000000000002.bin.tmp-abcdef", "partial");
    CHECK(ckpts.load_latest()->step == 1);
    ckpts.save(sample(2));  // a later save clears the dead save's temporary file
    CHECK_FALSE(fs::exists(dir.path / ".ckpt-000000000002.bin.tmp-abcdef"));
    spit(dir.path / "ckpt-000000000003.bin", "garbage");
    CHECK_THROWS_WITH(ckpts.load_latest(), Catch::Contains("ckpt-000000000003.bin"));
}
