#include "ptrun/launcher/process/live_usage.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "temp_dir.hpp"

using namespace ptrun::launcher;

TEST_CASE("statm: the resident pages are its second field", "[usage]") {
    CHECK(statm_resident_pages("2458 1024 512 10 0 300 0\n") == 1024U);
    CHECK_FALSE(statm_resident_pages("2458\n"));
    CHECK_FALSE(statm_resident_pages(""));  // a process gone
}

TEST_CASE("status: a key's value in KiB", "[usage]") {
    const std::string status =
        "Name:\tpython3\nVmPeak:\t  900 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\n";
    CHECK(status_kib(status, "VmHWM") == 51200U);
    CHECK(status_kib(status, "VmRSS") == 40960U);
    CHECK_FALSE(status_kib(status, "VmSwap"));
    CHECK_FALSE(status_kib("VmHWMx:\t1 kB\n", "VmHWM"));
    CHECK_FALSE(status_kib("Name:\tzombie\n", "VmHWM"));  // a zombie has no memory lines
}

TEST_CASE("stat: utime + stime + cutime + cstime, past a command with ') ' in it", "[usage]") {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    // stime cutime cstime ...
    const std::string stat = "42 (a) b (c) R 1 42 42 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1\n";
    CHECK(stat_cpu_ticks(stat) == 310U);
    CHECK_FALSE(stat_cpu_ticks("42 (a) R 1 42 42 0 -1 4194560 100 0 0 0 250\n"));  // cut short
    CHECK_FALSE(stat_cpu_ticks("garbage"));
}

TEST_CASE("a process's usage from its /proc files, empty where unreadable", "[usage]") {
    test::TempDir proc;
    std::filesystem::create_directory(proc.path / "77");
    std::ofstream(proc.path / "77" / "statm") << "5000 2560 100 1 0 2000 0\n";
    std::ofstream(proc.path / "77" / "status") << "Name:\tx\nVmHWM:\t20480 kB\n";
    std::ofstream(proc.path / "77" / "stat")
        << "77 (x) S 1 77 77 0 -1 0 0 0 0 0 " << 3 * ::sysconf(_SC_CLK_TCK) << " "
        << ::sysconf(_SC_CLK_TCK) << " 0 0 20 0 1\n";
    const auto u = read_process_usage(77, proc.path.string());
    CHECK(u.memory_bytes == 2560U * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
    CHECK(u.peak_bytes == 20U << 20);
    REQUIRE(u.cpu_seconds);
    CHECK(*u.cpu_seconds == Approx(4.0));
    CHECK(read_process_usage(78, proc.path.string()) == LiveUsage{});  // gone
}

TEST_CASE("this process: 50 MiB touched show in its resident set and peak", "[usage]") {
    std::vector<char> held(50U << 20, 1);
    const auto u = read_process_usage(::getpid());
    REQUIRE(u.memory_bytes);
    REQUIRE(u.peak_bytes);
    CHECK(*u.memory_bytes >= held.size());
    CHECK(held[held.size() / 2] == 1);  // read: the pages exist
    CHECK(*u.peak_bytes >= *u.memory_bytes);
    REQUIRE(u.cpu_seconds);
    CHECK(*u.cpu_seconds >= 0);
}

TEST_CASE("a memory cgroup's figures replace the process's memory", "[usage]") {
    test::TempDir dir;
    std::ofstream(dir.path / "memory.usage_in_bytes") << "73400320\n";
    std::ofstream(dir.path / "memory.max_usage_in_bytes") << "104857600\n";
    std::ofstream(dir.path / "memory.oom_control")
        << "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
    LiveUsage process{1U << 20, 2U << 20, 1.5, 0};
    const auto u = with_cgroup_usage(process, MemoryCgroup{"/w1", dir.path.string(), 1});
    CHECK(u.memory_bytes == 73400320U);
    CHECK(u.peak_bytes == 104857600U);
    CHECK(u.cpu_seconds == 1.5);
    CHECK(u.oom_kills == 2);
}
