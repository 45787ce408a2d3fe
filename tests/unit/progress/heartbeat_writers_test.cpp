// The protocol across languages: real worker processes (C against heartbeat.h alone, Python
// with python/ptrun/heartbeat.py) write, the launcher's HeartbeatFile reads.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "child_process.hpp"
#include "ptrun/progress/heartbeat_file.hpp"

using namespace ptrun::progress;
using ptrun::test::run_child;

namespace {

std::string temp_path(const std::string& name) {
    auto p = std::filesystem::temp_directory_path() /
             ("ptrun-hb-writers-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove(p);
    return p.string();
}

ptrun::test::ChildResult python(const std::string& code, const std::string& hb_path) {
    return run_child({PTRUN_TEST_PYTHON, "-c", code}, {{"PTRUN_HEARTBEAT_FILE", hb_path},
                                                       {"PYTHONPATH", PTRUN_TEST_PYTHONPATH},
                                                       {"PYTHONDONTWRITEBYTECODE", "1"}});
}

}  // namespace

TEST_CASE("a C worker beats and announces a section through heartbeat.h", "[progress]") {
    auto file = HeartbeatFile::create(temp_path("c"), 2);
    const auto before = ptrun_heartbeat_coarse_now_ns();  // the clock heartbeat.h beats with
    auto r = run_child({PTRUN_TEST_C_WRITER, "7", "checkpoint", "30"},
                       {{"PTRUN_HEARTBEAT_FILE", file.path()}});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const HeartbeatSample s = file.read();
    CHECK(s.count == 8);  // 7 beats and the section's entry
    CHECK(s.last_progress_ns >= before);
    CHECK(s.writer_pid > 0);
    CHECK(s.writer_pid != ::getpid());
    REQUIRE(s.section);
    CHECK(s.section->name == "checkpoint");
    CHECK(s.section->deadline_ns - s.section->started_ns == 30'000'000'000ULL);

    r = run_child({PTRUN_TEST_C_WRITER, "0", "eval", "0", "leave"},
                  {{"PTRUN_HEARTBEAT_FILE", file.path()}});
    REQUIRE(r.exit_code == 0);
    CHECK(file.read().count == 10);
    CHECK_FALSE(file.read().section);
}

TEST_CASE("a C worker without the variable or with a bad file is told apart", "[progress]") {
    auto r = run_child({PTRUN_TEST_C_WRITER, "1"}, {{"PTRUN_HEARTBEAT_FILE", ""}});
    CHECK(r.exit_code == 4);  // not under ptrun: NULL, errno 0
    r = run_child({PTRUN_TEST_C_WRITER, "1"}, {{"PTRUN_HEARTBEAT_FILE", "/proc/self/status"}});
    CHECK(r.exit_code == 3);  // set but unusable: NULL with errno
}

TEST_CASE("a Python worker beats with the standard library module", "[progress]") {
    auto file = HeartbeatFile::create(temp_path("py"), 0);
    const auto before = monotonic_now_ns();
    auto r = python(
        "from ptrun import heartbeat\n"
        "assert heartbeat.enabled\n"
        "for _ in range(5): heartbeat.beat()\n"
        "heartbeat.enter('évaluation', 12.5)\n",
        file.path());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const HeartbeatSample s = file.read();
    CHECK(s.count == 6);
    CHECK(s.last_progress_ns >= before);
    CHECK(s.last_progress_ns <= monotonic_now_ns());
    REQUIRE(s.section);
    CHECK(s.section->name == "\xc3\xa9valuation");
    CHECK(s.section->deadline_ns - s.section->started_ns == 12'500'000'000ULL);

    r = python(
        "from ptrun import heartbeat\n"
        "try:\n"
        "    with heartbeat.section('x' * 200, timeout=None):\n"
        "        raise KeyError\n"
        "except KeyError:\n"
        "    pass\n",
        file.path());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(file.read().count == 8);
    CHECK_FALSE(file.read().section);  // left on the exception too
}

TEST_CASE("the Python module cuts long names as C does and has no deadline for inf", "[progress]") {
    auto file = HeartbeatFile::create(temp_path("pynames"), 0);
    auto r = python(
        "from ptrun import heartbeat\n"
        "heartbeat.enter('y' * 94 + 'éz', float('inf'))\n",
        file.path());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto s = file.read().section;
    REQUIRE(s);
    CHECK(s->name == std::string(94, 'y'));
    CHECK(s->deadline_ns == 0);
}

TEST_CASE("the Python module is a no-op without the variable and names a bad file", "[progress]") {
    auto r = python(
        "from ptrun import heartbeat\n"
        "assert not heartbeat.enabled\n"
        "heartbeat.beat()\n"
        "with heartbeat.section('s', 1): pass\n",
        "");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    r = python("import ptrun.heartbeat\n", "/nonexistent/hb");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("HeartbeatError") &&
                             Catch::Contains("PTRUN_HEARTBEAT_FILE='/nonexistent/hb'"));
}
