#include "ptrun/progress/heartbeat.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/progress/heartbeat_file.hpp"

using namespace ptrun::progress;
using namespace std::chrono_literals;

namespace {

/// A fresh path under the test's temporary directory, removed at the end of the test.
struct TempPath {
    std::string path;
    explicit TempPath(const std::string& name)
        : path((std::filesystem::temp_directory_path() /
                ("ptrun-hb-test-" + std::to_string(::getpid()) + "-" + name))
                   .string()) {
        std::filesystem::remove(path);
    }
    ~TempPath() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

}  // namespace

TEST_CASE("a new record has no beats, no section and no writer", "[progress]") {
    TempPath p("new");
    const auto before = monotonic_now_ns();
    auto file = HeartbeatFile::create(p.path, 3);
    const HeartbeatSample s = file.read();
    CHECK(s.count == 0);
    CHECK(s.last_progress_ns == 0);
    CHECK(s.writer_pid == 0);
    CHECK_FALSE(s.section);
    CHECK(std::filesystem::file_size(p.path) == sizeof(ptrun_heartbeat_record));
    CHECK((std::filesystem::status(p.path).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    CHECK(monotonic_now_ns() >= before);
}

TEST_CASE("each beat adds one and stamps the monotonic time (coarse)", "[progress]") {
    TempPath p("beats");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    CHECK(hb.attached());
    CHECK(file.read().writer_pid == ::getpid());
    // Beats read the coarse clock: the same timeline, never ahead of the precise one.
    const auto before = ptrun_heartbeat_coarse_now_ns();
    for (int i = 0; i < 5; ++i) hb.beat();
    const auto after = monotonic_now_ns();
    const HeartbeatSample s = file.read();
    CHECK(s.count == 5);
    CHECK(s.last_progress_ns >= before);
    CHECK(s.last_progress_ns <= after);
    // The record's clock is steady_clock's.
    const auto steady = std::chrono::steady_clock::now();
    CHECK(to_steady(monotonic_now_ns()) >= steady);
    CHECK(to_steady(s.last_progress_ns) <= steady);
}

TEST_CASE("beats from several threads are all counted", "[progress]") {
    TempPath p("threads");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&hb] {
            for (int i = 0; i < 10000; ++i) hb.beat();
        });
    }
    for (auto& t : threads) t.join();
    CHECK(file.read().count == 40000);
}

TEST_CASE("a section carries its name and deadline until it is left", "[progress]") {
    TempPath p("section");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    const auto before = monotonic_now_ns();
    {
        Heartbeat::Section s(hb, "checkpoint", 600s);
        const HeartbeatSample in = file.read();
        REQUIRE(in.section);
        CHECK(in.section->name == "checkpoint");
        CHECK(in.section->started_ns >= before);
        CHECK(in.section->deadline_ns >= in.section->started_ns + 600'000'000'000ULL);
        CHECK(in.section->deadline_ns <= monotonic_now_ns() + 600'000'000'000ULL);
        CHECK(in.count == 1);  // entering is a beat
    }
    const HeartbeatSample out = file.read();
    CHECK_FALSE(out.section);
    CHECK(out.count == 2);  // leaving too
}

TEST_CASE("a section without a positive finite timeout has no deadline", "[progress]") {
    TempPath p("nodeadline");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    for (double t : {0.0, -1.0, 1e300, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
        hb.enter("eval", std::chrono::duration<double>(t));
        const auto s = file.read().section;
        REQUIRE(s);
        CHECK(s->deadline_ns == 0);
    }
    hb.enter("eval", std::chrono::duration<double>(0.5));
    CHECK(file.read().section->deadline_ns != 0);
}

TEST_CASE("entering a section replaces the open one", "[progress]") {
    TempPath p("replace");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    hb.enter("a rather long first name", 10s);
    hb.enter("b", 20s);
    CHECK(file.read().section->name == "b");
    hb.leave();
    hb.leave();  // leaving with nothing open is harmless
    CHECK_FALSE(file.read().section);
}

TEST_CASE("long section names are cut at a UTF-8 character boundary", "[progress]") {
    TempPath p("long");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    hb.enter(std::string(200, 'x'), 1s);
    CHECK(file.read().section->name == std::string(PTRUN_HEARTBEAT_NAME_MAX, 'x'));
    // 94 ASCII bytes then a 2-byte character: the character does not fit and is dropped whole.
    hb.enter(std::string(94, 'y') + "\xc3\xa9" + "z", 1s);
    CHECK(file.read().section->name == std::string(94, 'y'));
}

TEST_CASE("a section being written reads as none", "[progress]") {
    TempPath p("torn");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    hb.enter("save", 5s);
    // A writer stopped between the two halves of its update leaves the sequence odd.
    auto* raw = reinterpret_cast<ptrun_heartbeat_record*>(ptrun_heartbeat_open(p.path.c_str()));
    REQUIRE(raw != nullptr);
    raw->section_seq += 1;
    CHECK_FALSE(file.read().section);
    raw->section_seq += 1;
    CHECK(file.read().section);
    ptrun_heartbeat_close(raw);
}

TEST_CASE("a detached heartbeat ignores every call", "[progress]") {
    Heartbeat hb;
    CHECK_FALSE(hb.attached());
    hb.beat();
    hb.enter("x", 1s);
    hb.leave();
    CHECK_FALSE(Heartbeat::open_if_set("").attached());
}

TEST_CASE("opening anything but a heartbeat record fails naming the path", "[progress]") {
    TempPath p("bad");
    CHECK_THROWS_WITH(Heartbeat::open(p.path),
                      Catch::Contains("PTRUN_HEARTBEAT_FILE='" + p.path + "'") &&
                          Catch::Contains("No such file"));
    { std::ofstream(p.path) << "hello"; }
    CHECK_THROWS_WITH(Heartbeat::open(p.path), Catch::Contains("not a version-1 ptrun heartbeat"));
    {
        std::ofstream f(p.path);
        f << std::string(256, 'p');
    }
    CHECK_THROWS_WITH(Heartbeat::open(p.path), Catch::Contains("not a version-1 ptrun heartbeat"));
}

TEST_CASE("the launcher's file is exclusive and goes away with its owner", "[progress]") {
    TempPath p("owner");
    {
        auto file = HeartbeatFile::create(p.path, 1);
        CHECK_THROWS_WITH(HeartbeatFile::create(p.path, 1),
                          Catch::Contains(p.path) && Catch::Contains("cannot create it"));
        auto hb = Heartbeat::open(p.path);
        HeartbeatFile moved = std::move(file);
        hb.beat();
        CHECK(moved.read().count == 1);
        CHECK(moved.path() == p.path);
    }
    CHECK_FALSE(std::filesystem::exists(p.path));
}

TEST_CASE("a worker keeps its mapping after the name is removed", "[progress]") {
    TempPath p("unlinked");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    file.unlink();
    CHECK_FALSE(std::filesystem::exists(p.path));
    hb.beat();
    CHECK(file.read().count == 1);
}

namespace {

/// Writes `bytes` at `offset` of the record file, as a worker may.
void poke(const std::string& path, off_t offset, const void* bytes, std::size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f != nullptr);
    REQUIRE(std::fseek(f, offset, SEEK_SET) == 0);
    REQUIRE(std::fwrite(bytes, 1, size, f) == size);
    std::fclose(f);
}

}  // namespace

TEST_CASE("a record its worker truncated reads as the last sound sample, named shrunk",
          "[progress]") {
    TempPath p("truncated");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    for (int i = 0; i < 3; ++i) hb.beat();
    const auto sound = file.read();
    REQUIRE(sound.count == 3);
    CHECK(sound.problem.empty());
    std::filesystem::resize_file(p.path, 0);  // what os.truncate(path, 0) does: no SIGBUS here
    auto damaged = file.read();
    CHECK(damaged.problem == "shrank to 0 bytes");
    CHECK(damaged.count == 3);
    CHECK(damaged.last_progress_ns == sound.last_progress_ns);
    std::filesystem::resize_file(p.path, 100);
    CHECK(file.read().problem == "shrank to 100 bytes");
}

TEST_CASE("a record whose file was removed still reads", "[progress]") {
    TempPath p("removed");
    auto file = HeartbeatFile::create(p.path, 0);
    auto hb = Heartbeat::open(p.path);
    std::filesystem::remove(p.path);
    hb.beat();
    const auto s = file.read();
    CHECK(s.problem.empty());
    CHECK(s.count == 1);
}

TEST_CASE("a record with an overwritten header or times out of range is corrupt", "[progress]") {
    TempPath p("corrupt");
    auto file = HeartbeatFile::create(p.path, 0);
    SECTION("header") {
        poke(p.path, 0, "garbage!", 8);
        CHECK(file.read().problem == "is corrupt (its header was overwritten)");
    }
    SECTION("a last beat at 2^63-1000 ns") {
        const std::uint64_t future = (1ull << 63) - 1000;
        poke(p.path, offsetof(ptrun_heartbeat_record, last_progress_ns), &future, sizeof future);
        const auto s = file.read();
        CHECK_THAT(s.problem, Catch::StartsWith("is corrupt (its last beat is "));
        CHECK_THAT(s.problem, Catch::EndsWith(" s in the future)"));
        CHECK(s.last_progress_ns == 0);  // the last sound sample's
    }
    SECTION("a section deadline of 2^64-1") {
        const std::uint64_t section[3] = {2, monotonic_now_ns(), ~0ull};  // seq, started, deadline
        poke(p.path, offsetof(ptrun_heartbeat_record, section_seq), section, sizeof section);
        const auto s = file.read();
        CHECK(s.problem == "is corrupt (its section's deadline is out of range)");
        CHECK_FALSE(s.section);
    }
    SECTION("a section that starts in the future") {
        const std::uint64_t section[3] = {2, monotonic_now_ns() + 3'600'000'000'000ull, 0};
        poke(p.path, offsetof(ptrun_heartbeat_record, section_seq), section, sizeof section);
        CHECK_THAT(file.read().problem, Catch::StartsWith("is corrupt (its section starts "));
    }
}

TEST_CASE("the first beat goes to ptrun's events channel, and to no other socket there",
          "[progress]") {
    // PTRUN_EVENTS_SOCKET names an inherited descriptor ("fd:4"); a program may have closed it
    // and put a socket of its own at that number: that one gets no event.
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) == 0);
    REQUIRE(::setenv("PTRUN_EVENTS_SOCKET", ("fd:" + std::to_string(pair[1])).c_str(), 1) == 0);
    ptrun_heartbeat_first_beat_();
    char buf[128] = {};
    const auto n = ::recv(pair[0], buf, sizeof buf - 1, MSG_DONTWAIT);
    REQUIRE(n > 0);
    CHECK(std::string(buf).rfind("ptrun-event 1 first_progress ", 0) == 0);

    int receiver = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int other = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    REQUIRE(::bind(receiver, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    REQUIRE(::getsockname(receiver, reinterpret_cast<sockaddr*>(&at), &len) == 0);
    REQUIRE(::connect(other, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    REQUIRE(::setenv("PTRUN_EVENTS_SOCKET", ("fd:" + std::to_string(other)).c_str(), 1) == 0);
    ptrun_heartbeat_first_beat_();
    CHECK(::recv(receiver, buf, sizeof buf, MSG_DONTWAIT) < 0);  // nothing came
    ::unsetenv("PTRUN_EVENTS_SOCKET");
    for (int fd : {pair[0], pair[1], receiver, other}) ::close(fd);
}
