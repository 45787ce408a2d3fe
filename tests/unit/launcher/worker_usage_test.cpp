#include "ptrun/launcher/process/worker_usage.hpp"

#include <catch2/catch.hpp>
#include <csignal>

#include "ptrun/launcher/cli/memory_size.hpp"
#include "ptrun/launcher/output/failure_report.hpp"
#include "ptrun/launcher/output/usage_table.hpp"
#include "ptrun/launcher/process/oom_record.hpp"

using namespace ptrun::launcher;

TEST_CASE("the kernel's oom-kill line names the pid, its constraint and cgroup", "[usage]") {
    const std::string line =
        "3,1234,5000000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/job/ptrun-1-ab/w2,task_memcg=/job/ptrun-1-ab/w2,task=python3,"
        "pid=4242,uid=0\n";
    auto kill = parse_oom_record(line, 4242, 1'000'000);
    REQUIRE(kill);
    CHECK(kill->constraint == "CONSTRAINT_MEMCG");
    CHECK(kill->oom_memcg == "/job/ptrun-1-ab/w2");
    CHECK_FALSE(parse_oom_record(line, 424, 0));           // another pid (a prefix of it)
    CHECK_FALSE(parse_oom_record(line, 4242, 6'000'000));  // logged before the worker started
    CHECK(parse_oom_record("3,7,9000000,-;Out of memory: Killed process 77 (a.out) total-vm:1kB",
                           77, 0) == OomKill{});
    CHECK_FALSE(parse_oom_record("6,8,9000000,-;br0: port 1 entered blocking state", 77, 0));
    CHECK_FALSE(parse_oom_record("garbage", 77, 0));
}

TEST_CASE("rusage gives CPU time (user + system) and the peak in bytes", "[usage]") {
    rusage ru{};
    ru.ru_utime = {1, 500'000};
    ru.ru_stime = {0, 250'000};
    ru.ru_maxrss = 204'800;  // KiB
    auto u = usage_from_rusage(ru);
    CHECK(*u.cpu_seconds == Approx(1.75));
    CHECK(*u.peak_bytes == 200ULL << 20);
    CHECK_FALSE(u.oom_killed);
}

TEST_CASE("sizes read as a person writes them", "[usage]") {
    CHECK(bytes_text(512) == "512 B");
    CHECK(bytes_text(200ULL << 20) == "200 MiB");
    CHECK(bytes_text(static_cast<std::uint64_t>(21.4 * (1ULL << 30))) == "21.4 GiB");
    CHECK(bytes_text(24ULL << 30) == "24 GiB");
    CHECK(parse_memory_size("24G") == 24ULL << 30);
    CHECK(parse_memory_size("512MiB") == 512ULL << 20);
    CHECK(parse_memory_size("100m") == 100ULL << 20);
    CHECK(parse_memory_size("1.5G") == 3ULL << 29);
    CHECK(parse_memory_size("4096") == 4096);
    CHECK_FALSE(parse_memory_size("12XB"));
    CHECK_FALSE(parse_memory_size(""));
    CHECK_FALSE(parse_memory_size("G"));
    CHECK_FALSE(parse_memory_size("0"));
    CHECK_FALSE(parse_memory_size("-5M"));
    CHECK_FALSE(parse_memory_size("99999999T"));
}

TEST_CASE("an OOM kill is reported as such, with the limit, and keeps exit code 137", "[usage]") {
    WorkerEnd end;
    end.rank = 3;
    end.local_rank = 3;
    end.pid = 42;
    end.exit = WorkerExit{0, SIGKILL};
    end.usage.oom_killed = true;
    end.usage.peak_bytes = static_cast<std::uint64_t>(21.4 * (1ULL << 30));
    end.usage.limit = MemoryLimit{24ULL << 30, "the node's memory"};
    CHECK(failure_line(end) ==
          "worker rank 3 (local rank 3, pid 42) was killed by the kernel's OOM killer (peak 21.4 "
          "GiB; limit 24 GiB, the node's memory)");
    CHECK_THAT(exit_text(end.exit, end.usage), Catch::EndsWith("exit code 137"));
    CHECK_THAT(format_failure_report(end, {}, ReportContext{}),
               Catch::Contains("killed by the kernel's OOM killer (peak 21.4 GiB"));
    WorkerUsage plain;
    CHECK(exit_text(end.exit, plain) == describe(end.exit));  // no OOM record: no OOM claim
    plain.node_oom_kills_meanwhile = 2;
    CHECK_THAT(exit_text(end.exit, plain), Catch::Contains("likely this one"));
}

TEST_CASE("the end table merges consecutive identical ranks as --explain does", "[usage]") {
    auto row = [](int rank, std::string ended) {
        RankUse u;
        u.rank = rank;
        u.wall = std::chrono::duration<double>(2.04);
        u.cpu_seconds = 1.0;
        u.peak_bytes = 10ULL << 20;
        u.ended = std::move(ended);
        return u;
    };
    auto text =
        format_usage_table("node1", {row(0, "exit code 0"), row(1, "exit code 0"),
                                     row(2, "exit code 0"), row(3, "OOM-killed (SIGKILL)")});
    CHECK_THAT(text, Catch::StartsWith("what each worker used on node1:\n"));
    CHECK_THAT(text, Catch::Contains("  0-2    2 s   1 s  10 MiB       0         exit code 0\n"));
    CHECK_THAT(
        text, Catch::Contains("  3      2 s   1 s  10 MiB       0         OOM-killed (SIGKILL)\n"));
    RankUse never;
    never.rank = 0;
    never.ended = "killed with its attempt (SIGKILL)";
    CHECK_THAT(format_usage_table("n", {never}), Catch::Contains(" -  "));
    CHECK(ended_cell(WorkerExit{0, SIGTERM}, {}, true) == "SIGTERM, stopped by ptrun");
}
