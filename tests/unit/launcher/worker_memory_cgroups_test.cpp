// --memory-limit-per-worker on cgroup v2, against a directory laid out like cgroupfs: this
// machine (and CI) has no v2 memory controller to run it on, so these check what ptrun writes
// and how it reads a worker's peak and OOM kills; the v1 path runs for real in
// integration.worker_usage. ptrun only opens cgroup files (never creates them), so this file
// defines mkdir for the test binary: a directory made in a FakeCgroupfs cgroup gets the files
// the kernel would give the new cgroup.

#include "ptrun/launcher/process/worker_memory_cgroups.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptrun/launcher/output/usage_table.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
namespace fs = std::filesystem;

namespace {

const char* fake_cgroupfs_root = nullptr;  ///< set by a FakeCgroupfs while it lives

/// While it lives, a directory made under `root` in a cgroup (a directory with
/// cgroup.controllers) gets the files cgroup v2 gives a new cgroup, memory's where its parent's
/// cgroup.subtree_control enables memory. They start empty (the kernel's ignore O_TRUNC; these
/// then hold exactly what was last written).
struct FakeCgroupfs {
    std::string root;
    explicit FakeCgroupfs(const fs::path& r) : root(r.string()) {
        fake_cgroupfs_root = root.c_str();
    }
    ~FakeCgroupfs() { fake_cgroupfs_root = nullptr; }
    FakeCgroupfs(const FakeCgroupfs&) = delete;
    FakeCgroupfs& operator=(const FakeCgroupfs&) = delete;
};

void touch(const std::string& path, const std::string& text = "") { std::ofstream(path) << text; }

bool enables_memory(const std::string& subtree_control_path) {
    std::ifstream in(subtree_control_path);
    for (std::string w; in >> w;) {
        if (w == "memory" || w == "+memory") return true;
    }
    return false;
}

void made_directory(const char* path) {
    const char* root = fake_cgroupfs_root;
    if (!root || std::string(path).rfind(root, 0) != 0) return;
    const std::string dir(path);
    const std::string parent = dir.substr(0, dir.find_last_of('/'));
    if (::access((parent + "/cgroup.controllers").c_str(), F_OK) != 0) return;
    const bool memory = enables_memory(parent + "/cgroup.subtree_control");
    touch(dir + "/cgroup.controllers", memory ? "memory\n" : "");
    for (const char* f : {"cgroup.procs", "cgroup.subtree_control", "cgroup.kill", "cgroup.events"})
        touch(dir + "/" + f);
    if (!memory) return;
    for (const char* f :
         {"memory.max", "memory.swap.max", "memory.current", "memory.peak", "memory.events"})
        touch(dir + "/" + f);
}

}  // namespace

/// The test binary's mkdir (its code and its libraries', ptrun's included): the system call,
/// then the kernel's files where a FakeCgroupfs says it made a cgroup.
extern "C" int mkdir(const char* path, mode_t mode) noexcept {
    const int rc = static_cast<int>(::syscall(SYS_mkdirat, AT_FDCWD, path, mode));
    if (rc == 0) {
        const int saved = errno;
        made_directory(path);
        errno = saved;
    }
    return rc;
}

namespace {

void put(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

std::string got(const fs::path& file) {
    std::ifstream in(file);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

/// ptrun's own v2 cgroup P, as the kernel shows it with memory delegated to it and ptrun alone.
MemoryCgroup fake_v2_cgroup(const fs::path& root, const std::string& controllers,
                            const std::string& procs) {
    const fs::path p = root / "user.slice" / "job";
    put(p / "cgroup.controllers", controllers);
    put(p / "cgroup.subtree_control", "");
    put(p / "cgroup.procs", procs);
    return MemoryCgroup{"/user.slice/job", p.string(), 2};
}

std::vector<fs::path> job_dirs(const std::string& parent) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(parent)) {
        if (e.is_directory() && e.path().filename().string().rfind("ptrun-", 0) == 0)
            out.push_back(e.path());
    }
    return out;
}

}  // namespace

TEST_CASE("on cgroup v2 ptrun moves into a leaf, hands memory down and sets memory.max",
          "[usage][cgroup]") {
    test::TempDir tmp;
    const std::string self = std::to_string(::getpid());
    const auto own = fake_v2_cgroup(tmp.path, "cpuset cpu io memory pids\n", self + "\n");
    FakeCgroupfs cgroupfs(tmp.path);
    std::string error;
    auto memory = WorkerMemoryCgroups::create_in(own, 24ULL << 30, &error);
    REQUIRE(memory);
    CHECK(error.empty());
    CHECK(memory->version() == 2);
    const auto jobs = job_dirs(own.dir);
    REQUIRE(jobs.size() == 1);
    const fs::path job = jobs[0];
    CHECK(memory->dir() == job.string());
    CHECK(job.filename().string().rfind("ptrun-" + self + "-", 0) == 0);
    // No internal processes: ptrun left P for job/ptrun before P enabled memory for its children.
    CHECK(got(job / "ptrun" / "cgroup.procs") == "0");
    CHECK(got(fs::path(own.dir) / "cgroup.subtree_control") == "+memory");
    CHECK(got(job / "cgroup.subtree_control") == "+memory");

    MemoryCgroup w1;
    int fd = -1;
    REQUIRE(memory->add(&w1, &fd, &error));
    CHECK(w1.version == 2);
    CHECK(w1.dir == (job / "w1").string());
    CHECK(w1.path == "/user.slice/job/" + job.filename().string() + "/w1");
    CHECK(got(job / "w1" / "memory.max") == std::to_string(24ULL << 30));
    CHECK(got(job / "w1" / "memory.swap.max") == "0");  // swap accounted: none for it
    REQUIRE(fd >= 0);
    CHECK(::write(fd, "0", 1) == 1);  // what the worker writes before exec
    ::close(fd);
    CHECK(got(job / "w1" / "cgroup.procs") == "0");

    MemoryCgroup w2;
    REQUIRE(memory->add(&w2, &fd, &error));
    ::close(fd);
    CHECK(w2.dir == (job / "w2").string());

    memory->kill_workers();
    CHECK(got(job / "w1" / "cgroup.kill") == "1");
    CHECK(got(job / "w2" / "cgroup.kill") == "1");
}

TEST_CASE("ptrun creates no cgroup file: where the kernel made none, nothing is set up",
          "[usage][cgroup]") {
    test::TempDir tmp;
    const std::string self = std::to_string(::getpid());
    const auto own = fake_v2_cgroup(tmp.path, "memory pids\n", self + "\n");
    std::string error;  // no FakeCgroupfs: the job's leaf has no cgroup.procs
    CHECK_FALSE(WorkerMemoryCgroups::create_in(own, 1ULL << 30, &error));
    CHECK_THAT(error, Catch::Contains("cannot move ptrun into its own leaf cgroup") &&
                          Catch::Contains("/ptrun/cgroup.procs"));
    CHECK(job_dirs(own.dir).empty());
    CHECK(got(fs::path(own.dir) / "cgroup.subtree_control").empty());
}

TEST_CASE("a v2 worker's peak is memory.peak, none without it, and its OOM kills memory.events",
          "[usage][cgroup]") {
    test::TempDir tmp;
    const fs::path w = tmp.path / "w1";
    const MemoryCgroup c{"/job/w1", w.string(), 2};
    put(w / "memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n");
    put(w / "memory.max", "104857600\n");
    put(w / "memory.current", "5242880\n");
    CHECK_FALSE(memory_peak(c));  // Linux < 5.19: no memory.peak, so no peak from the cgroup
    put(w / "memory.peak", "99614720\n");
    CHECK(memory_peak(c) == 99614720);
    CHECK(memory_oom_kills(c) == 1);
    CHECK(memory_limit(c) == 104857600);
    CHECK(memory_current(c) == 5242880);
    put(w / "memory.max", "max\n");
    CHECK_FALSE(memory_limit(c));
}

TEST_CASE("cgroup v2 without the memory controller for ptrun's cgroup is refused, naming why",
          "[usage][cgroup]") {
    test::TempDir tmp;
    const auto own = fake_v2_cgroup(tmp.path, "cpu io pids\n", std::to_string(::getpid()));
    std::string error;
    CHECK_FALSE(WorkerMemoryCgroups::create_in(own, 1ULL << 30, &error));
    CHECK_THAT(error, Catch::Contains("memory controller is not enabled") &&
                          Catch::Contains(own.dir) && Catch::Contains("'cpu io pids'"));
    CHECK(job_dirs(own.dir).empty());
    CHECK(got(fs::path(own.dir) / "cgroup.subtree_control").empty());
}

TEST_CASE("cgroup v2 is refused while other processes share ptrun's cgroup", "[usage][cgroup]") {
    test::TempDir tmp;
    const auto own =
        fake_v2_cgroup(tmp.path, "memory pids\n", "1\n" + std::to_string(::getpid()) + "\n77\n");
    std::string error;
    CHECK_FALSE(WorkerMemoryCgroups::create_in(own, 1ULL << 30, &error));
    CHECK_THAT(error, Catch::Contains("other processes share ptrun's cgroup") &&
                          Catch::Contains("pids 1, 77") && Catch::Contains("Delegate=yes"));
    CHECK(job_dirs(own.dir).empty());
    CHECK(worker_memory_place_in(own).refusal == error);
}

TEST_CASE("the job's memory limit is the tightest of its cgroup and those above it",
          "[usage][cgroup]") {
    test::TempDir tmp;
    const std::string unlimited = "9223372036854771712\n";  // v1's LONG_MAX rounded to a page
    put(tmp.path / "memory.limit_in_bytes", unlimited);
    put(tmp.path / "slurm" / "memory.limit_in_bytes", unlimited);
    put(tmp.path / "slurm" / "job_1" / "memory.limit_in_bytes", std::to_string(24ULL << 30));
    put(tmp.path / "slurm" / "job_1" / "step_0" / "memory.limit_in_bytes", unlimited);
    const MemoryCgroup step{"/slurm/job_1/step_0", (tmp.path / "slurm/job_1/step_0").string(), 1};
    const auto limit = cgroup_memory_limit(step);
    REQUIRE(limit);
    CHECK(*limit == MemoryLimit{24ULL << 30, "the job's memory cgroup /slurm/job_1"});
    CHECK(limit_text(*limit) == "24 GiB, the job's memory cgroup /slurm/job_1");

    put(tmp.path / "v2" / "a" / "memory.max", "1073741824\n");
    put(tmp.path / "v2" / "a" / "b" / "memory.max", "max\n");
    const MemoryCgroup b{"/a/b", (tmp.path / "v2/a/b").string(), 2};
    CHECK(cgroup_memory_limit(b) == MemoryLimit{1ULL << 30, "the job's memory cgroup /a"});
    const MemoryCgroup none{"/slurm", (tmp.path / "slurm").string(), 1};
    CHECK_FALSE(cgroup_memory_limit(none));
}
