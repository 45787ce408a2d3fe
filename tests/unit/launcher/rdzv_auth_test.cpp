#include "ptrun/launcher/membership/rdzv_auth.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& text, mode_t mode) {
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
}

}  // namespace

TEST_CASE("rdzv auth: a sealed value opens only under its own key name and secret",
          "[launcher][auth]") {
    RdzvAuth auth("0123456789abcdef0123456789abcdef");
    const std::string key = "/ptrun/rdzv/job/round/0/end";
    const std::string sealed = auth.seal(key, R"({"reason":"complete"})");
    std::string why;
    REQUIRE(auth.open(key, sealed, &why) == R"({"reason":"complete"})");

    CHECK_FALSE(auth.open("/ptrun/rdzv/job/round/1/end", sealed, &why));  // moved to another key
    CHECK_THAT(why, Catch::Contains("MAC does not match"));
    CHECK_FALSE(RdzvAuth("another secret, 32 bytes long!!!").open(key, sealed, &why));
    std::string tampered = sealed;
    tampered.back() = 'X';
    CHECK_FALSE(auth.open(key, tampered, &why));
    CHECK_FALSE(auth.open(key, R"({"reason":"complete","final":true,"exit_code":0})", &why));
    CHECK_THAT(why, Catch::Contains("not authenticated"));
    CHECK_FALSE(auth.open(key, "hmac-sha256:abc:x", &why));
    CHECK_THAT(why, Catch::Contains("malformed"));
    CHECK(auth.open(key, auth.seal(key, ""), &why) == "");
}

TEST_CASE("rdzv auth: without a secret values pass unchanged and sealed ones are refused",
          "[launcher][auth]") {
    RdzvAuth off;
    CHECK_FALSE(off.enabled());
    CHECK(off.seal("k", "v") == "v");
    std::string why;
    CHECK(off.open("k", "v", &why) == "v");
    CHECK_FALSE(off.open("k", RdzvAuth("0123456789abcdef").seal("k", "v"), &why));
    CHECK_THAT(why, Catch::Contains("no rendezvous key"));
}

TEST_CASE("rdzv key source: key_file, then PTRUN_RDZV_KEY_FILE, then the SLURM default",
          "[launcher][auth]") {
    ptrun::env::EnvMap env{
        {"PTRUN_RDZV_KEY_FILE", "/env/key"}, {"SLURM_JOB_ID", "42"}, {"HOME", "/home/u"}};
    auto s = rdzv_key_source("/conf/key", "r", env);
    REQUIRE(s);
    CHECK(s->path == "/conf/key");
    CHECK_FALSE(s->create);
    s = rdzv_key_source("", "r", env);
    CHECK(s->path == "/env/key");
    env.erase("PTRUN_RDZV_KEY_FILE");
    s = rdzv_key_source("", "r", env);
    CHECK(s->path == "/home/u/.ptrun/rdzv-key");
    CHECK(s->create);
    CHECK_THAT(s->scope, Catch::Contains("slurm job 42"));
    env.erase("SLURM_JOB_ID");
    CHECK_FALSE(rdzv_key_source("", "r", env));
}

TEST_CASE("rdzv key file: created private once, then read, bound to the run", "[launcher][auth]") {
    TempDir home;
    ptrun::env::EnvMap env{{"SLURM_JOB_ID", "7"}, {"HOME", home.path.string()}};
    auto source = *rdzv_key_source("", "7.0", env);
    const std::string first = load_rdzv_secret(source);
    struct stat st {};
    REQUIRE(::stat((home.path / ".ptrun/rdzv-key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(load_rdzv_secret(source) == first);
    auto other_run = *rdzv_key_source("", "7.1", env);
    CHECK(load_rdzv_secret(other_run) != first);
    CHECK(fs::directory_iterator(home.path / ".ptrun") != fs::directory_iterator());
    int files = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(home.path / ".ptrun")) ++files;
    CHECK(files == 1);  // no temporary file left behind
}

TEST_CASE("rdzv key file: refused when missing, shared with others, or short", "[launcher][auth]") {
    TempDir dir;
    RdzvKeySource s{(dir.path / "key").string(), false, "--rdzv-conf key_file", "run r"};
    CHECK_THROWS_WITH(load_rdzv_secret(s),
                      Catch::Contains("cannot open it") && Catch::Contains("key_file"));
    write_file(dir.path / "key", "0123456789abcdef0123456789abcdef\n", 0644);
    CHECK_THROWS_WITH(load_rdzv_secret(s),
                      Catch::Contains("mode 0644") && Catch::Contains("chmod 600"));
    write_file(dir.path / "key", "short\n", 0600);
    CHECK_THROWS_AS(load_rdzv_secret(s), UsageError);
    write_file(dir.path / "key", "0123456789abcdef0123456789abcdef\n", 0600);
    CHECK(load_rdzv_secret(s).size() == 32);
}
