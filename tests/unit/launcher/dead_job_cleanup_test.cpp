// A SIGKILLed ptrun's leftovers: the next ptrun removes its job cgroup, and keeps the job's
// record while the cgroup is still there, so that a later ptrun tries again instead of the
// cgroup leaking for good.
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ptrun/launcher/process/cgroup.hpp"
#include "ptrun/launcher/process/containment.hpp"
#include "ptrun/launcher/process/job_record.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<spdlog::logger> quiet() {
    return std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
}

/// A record left by a SIGKILLed ptrun in `records` whose cgroup is `cgroup`.
void leave_dead_record(const fs::path& records, const std::string& cgroup) {
    fs::create_directories(records);
    fs::permissions(records, fs::perms::owner_all);
    JobRecordData d;
    d.pid = 4242;
    d.run_id = "killed";
    d.tag = "4242-0badcafe";
    d.cgroup = cgroup;
    std::ofstream(records / "4242-0badcafe.rec") << encode_record(d);
}

/// A Containment's start-up, which cleans up after dead jobs (no cgroup of its own).
void start_a_job(const fs::path& records) {
    ContainmentOptions options;
    options.run_id = "next";
    options.use_cgroup = false;
    options.record_dirs = {records.string()};
    Containment containment(options, quiet());
}

/// True when this process may make cgroups under `parent`; else says the test is skipped.
bool cgroup_writable(const std::string& parent) {
    if (!parent.empty() && cgroup_unusable_reason(parent).empty()) return true;
    WARN("skipped: no cgroup v2 directory this process may write (" + parent + ")");
    return false;
}

}  // namespace

TEST_CASE("a dead job's record stays while its cgroup could not be removed",
          "[launcher][containment]") {
    test::TempDir root;
    // Stands for a cgroup that outlives the cleanup: a directory rmdir cannot remove.
    const fs::path cgroup = root.path / "ptrun-4242-0badcafe";
    fs::create_directories(cgroup);
    std::ofstream(cgroup / "left").flush();
    leave_dead_record(root.path / "records", cgroup.string());

    CHECK(destroy_cgroup(cgroup.string(), std::chrono::milliseconds(100)) < 0);
    start_a_job(root.path / "records");
    CHECK(fs::exists(root.path / "records" / "4242-0badcafe.rec"));  // for the next ptrun

    fs::remove(cgroup / "left");  // removable now: the next start removes it and the record
    start_a_job(root.path / "records");
    CHECK_FALSE(fs::exists(cgroup));
    CHECK_FALSE(fs::exists(root.path / "records"));
}

TEST_CASE("a dead job's record naming a cgroup never made is forgotten",
          "[launcher][containment]") {
    // A ptrun SIGKILLed after writing its record but before making its cgroup.
    test::TempDir root;
    leave_dead_record(root.path / "records", (root.path / "ptrun-never-made").string());
    CHECK(destroy_cgroup((root.path / "ptrun-never-made").string(),
                         std::chrono::milliseconds(100)) == 0);
    start_a_job(root.path / "records");
    CHECK_FALSE(fs::exists(root.path / "records"));
}

TEST_CASE("a dead job's cgroup is removed with cgroups its workers made below it",
          "[launcher][containment]") {
    const std::string parent = own_cgroup_dir();
    if (!cgroup_writable(parent)) return;
    const fs::path job = fs::path(parent) / ("ptrun-test-dead-" + std::to_string(::getpid()));
    fs::create_directories(job / "attempt-1" / "worker" / "inner");
    fs::create_directories(job / "helpers");
    const int n = destroy_cgroup(job.string(), std::chrono::milliseconds(2'000));
    const bool gone = !fs::exists(job);
    if (!gone) {  // leave nothing behind even when failing
        for (const char* d :
             {"attempt-1/worker/inner", "attempt-1/worker", "attempt-1", "helpers", ""})
            ::rmdir((job / d).c_str());
    }
    CHECK(n == 0);
    CHECK(gone);
}

TEST_CASE("a live job's cgroup is removed with cgroups its workers made below it",
          "[launcher][containment]") {
    // ptrun's own end (JobCgroup's destructor), not a later ptrun's cleanup: a worker that made a
    // cgroup below its own must not leave J, and so the job's record, behind.
    const std::string parent = own_cgroup_dir();
    if (!cgroup_writable(parent)) return;
    const std::string name = "ptrun-test-live-" + std::to_string(::getpid());
    const fs::path job = job_cgroup_path(parent, name);
    std::string error;
    auto cgroup = JobCgroup::create(parent, name, &error);
    REQUIRE(cgroup);
    CHECK(cgroup->path() == job.string());
    fs::create_directories(job / "worker" / "inner");
    const bool removed = cgroup->remove();
    const bool gone = !fs::exists(job);
    cgroup.reset();
    for (const char* d : {"worker/inner", "worker", ""}) ::rmdir((job / d).c_str());
    CHECK(removed);
    CHECK(gone);
}
