#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "ptrun/launcher/process/containment.hpp"

using namespace ptrun::launcher;

namespace {

bool is_child_subreaper() {
    int flag = 0;
    return ::prctl(PR_GET_CHILD_SUBREAPER, &flag) == 0 && flag != 0;
}

}  // namespace

TEST_CASE("a Containment leaves the process's subreaper flag to main", "[launcher][containment]") {
    REQUIRE_FALSE(is_child_subreaper());
    const auto dir = std::filesystem::temp_directory_path() /
                     ("ptrun-containment-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    ContainmentOptions options;
    options.run_id = "state";
    options.use_cgroup = false;
    options.record_dirs = {dir.string()};
    std::string described;
    {
        Containment containment(options, std::make_shared<spdlog::logger>(
                                             "t", std::make_shared<spdlog::sinks::null_sink_mt>()));
        described = containment.describe();
    }
    std::filesystem::remove_all(dir);
    CHECK_FALSE(is_child_subreaper());
    CHECK(described.rfind("no subreaper (no cgroup: PTRUN_CGROUP=0)", 0) == 0);

    // main's call, in a child process so that this one stays as it was.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(become_child_subreaper() && is_child_subreaper() ? 0 : 1);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}
