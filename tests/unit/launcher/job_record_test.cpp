#include "ptrun/launcher/process/job_record.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"

using namespace ptrun::launcher;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

JobRecordData sample() {
    JobRecordData d;
    d.pid = 4242;
    d.run_id = "job7";
    d.tag = "4242-0badcafe";
    d.cgroup = "/sys/fs/cgroup/x/ptrun-4242-0badcafe";
    d.temp_dirs = {"/dev/shm/ptrun-abc123"};
    return d;
}

}  // namespace

TEST_CASE("job record: the text form round-trips", "[launcher][containment]") {
    auto d = decode_record(encode_record(sample()));
    CHECK(d.pid == 4242);
    CHECK(d.run_id == "job7");
    CHECK(d.tag == "4242-0badcafe");
    CHECK(d.cgroup == sample().cgroup);
    CHECK(d.temp_dirs == sample().temp_dirs);
}

TEST_CASE("job record: a live record is not dead, an unlocked one is, once",
          "[launcher][containment]") {
    TempDir root;
    const std::vector<std::string> dirs{(root.path / "records").string()};
    std::string error;
    {
        auto record = JobRecord::create(sample(), dirs, &error);
        REQUIRE(record);
        record->add_temp_dir("/dev/shm/ptrun-def456");
        CHECK(find_dead_jobs(dirs).empty());  // its ptrun (this process) holds the lock
        struct stat st {};
        REQUIRE(::stat(dirs[0].c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);
    }
    CHECK_FALSE(fs::exists(dirs[0]));  // removed with the last record

    fs::create_directory(dirs[0]);
    fs::permissions(dirs[0], fs::perms::owner_all);
    std::ofstream(dirs[0] + "/1-dead.rec") << encode_record(sample());  // a SIGKILLed ptrun's
    auto dead = find_dead_jobs(dirs);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].data.tag == "4242-0badcafe");
    CHECK(find_dead_jobs(dirs).empty());  // claimed: no second ptrun cleans it too
    forget(dead[0]);
    CHECK_FALSE(fs::exists(dirs[0]));
}

TEST_CASE("job record: a directory others can enter is never used", "[launcher][containment]") {
    TempDir root;
    const std::string shared = (root.path / "shared").string();
    fs::create_directory(shared);
    fs::permissions(shared, fs::perms::all);
    std::string error;
    CHECK_FALSE(JobRecord::create(sample(), {shared}, &error));
    CHECK_THAT(error, Catch::Contains(shared));
    std::ofstream(shared + "/1-dead.rec") << encode_record(sample());
    CHECK(find_dead_jobs({shared}).empty());
}

TEST_CASE("job record: a record that cannot be made leaves no directory behind",
          "[launcher][containment]") {
    // Out of descriptors (EMFILE): the directories were made, the record could not be opened in
    // either; each one made for it goes again (an empty /tmp/ptrun-jobs-UID was left, which every
    // later ptrun listed for dead jobs).
    TempDir root;
    const std::vector<std::string> dirs{(root.path / "first").string(),
                                        (root.path / "second").string()};
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    int highest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the lowest free descriptor
    REQUIRE(highest >= 0);
    ::close(highest);
    rlimit none = saved;
    none.rlim_cur = static_cast<rlim_t>(highest);  // every descriptor from here on: EMFILE
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &none) == 0);
    std::string error;
    auto record = JobRecord::create(sample(), dirs, &error);
    ::setrlimit(RLIMIT_NOFILE, &saved);
    CHECK_FALSE(record);
    CHECK_FALSE(fs::exists(dirs[0]));
    CHECK_FALSE(fs::exists(dirs[1]));
}

TEST_CASE("job record: each update leaves exactly the current text, longer or shorter",
          "[launcher][containment]") {
    TempDir root;
    const std::string dir = (root.path / "records").string();
    std::string why;
    auto record = JobRecord::create(sample(), {dir}, &why);
    REQUIRE(record);
    auto expected = sample();
    const std::string file = dir + "/" + expected.tag + ".rec";
    auto text_of = [](const std::string& path) {
        std::ifstream in(path);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    CHECK(text_of(file) == encode_record(expected));
    record->add_temp_dir("/dev/shm/ptrun-def456");
    expected.temp_dirs.push_back("/dev/shm/ptrun-def456");
    CHECK(text_of(file) == encode_record(expected));  // longer: written over the old text
    record->set_cgroup("/c");
    expected.cgroup = "/c";
    CHECK(text_of(file) == encode_record(expected));  // shorter: nothing of the old text left
}
