#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "ptrun/launcher/process/environment_error.hpp"

namespace {

int listed_fds() {
    DIR* dir = ::opendir("/proc/self/fd");
    REQUIRE(dir != nullptr);
    int count = 0;
    while (const dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
    ::closedir(dir);
    return count - 1;
}

}  // namespace

TEST_CASE("open_fd_count counts this process's descriptors as /proc/self/fd lists them",
          "[environment_error]") {
    const int before = ptrun::launcher::open_fd_count();
    CHECK(before == listed_fds());
    std::vector<int> opened;
    for (int i = 0; i < 5; ++i) opened.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    CHECK(ptrun::launcher::open_fd_count() == before + 5);
    CHECK(ptrun::launcher::open_fd_count() == listed_fds());
    for (int fd : opened) ::close(fd);
    CHECK(ptrun::launcher::open_fd_count() == before);
}
