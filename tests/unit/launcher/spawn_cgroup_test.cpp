#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "ptrun/launcher/process/spawn.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;

namespace {

/// A worker (`true`) whose cgroup is `dir`, a plain directory: clone3 refuses it as a cgroup, so
/// the child joins it the way older kernels need, by writing "0" to the directory's cgroup.procs.
int spawn_into(const std::filesystem::path& dir, int* cgroup_errno) {
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir_fd >= 0);
    SpawnRequest request;
    request.exec_path = "/bin/true";
    request.argv = {"true"};
    request.cgroup_dir_fd = dir_fd;
    request.cgroup_errno = cgroup_errno;
    const pid_t pid = spawn_worker(request);
    ::close(dir_fd);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return status;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("a worker clone3 cannot create in its cgroup joins it through cgroup.procs, opened then",
          "[spawn]") {
    test::TempDir dir;
    std::ofstream(dir.path / "cgroup.procs").flush();
    int cgroup_errno = 0;
    CHECK(spawn_into(dir.path, &cgroup_errno) == 0);
    CHECK(cgroup_errno == 0);
    CHECK(read_file(dir.path / "cgroup.procs") == "0");
}

TEST_CASE("a worker whose cgroup.procs cannot be opened starts outside it, the errno reported",
          "[spawn]") {
    test::TempDir dir;
    int cgroup_errno = 0;
    CHECK(spawn_into(dir.path, &cgroup_errno) == 0);
    CHECK(cgroup_errno == ENOENT);
}
