#include "ptrun/launcher/output/failure_report.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>

using namespace ptrun::launcher;

TEST_CASE("failure report names host, ranks, pid, exit and time", "[launcher][report]") {
    WorkerEnd root;
    root.host = "node7";
    root.local_rank = 1;
    root.rank = 5;
    root.pid = 4242;
    root.exit = WorkerExit{0, SIGKILL};
    WorkerEnd other = root;
    other.local_rank = 0;
    other.rank = 4;
    other.pid = 4241;
    other.exit = WorkerExit{0, SIGTERM};
    other.stopped_by_ptrun = true;
    auto text = format_failure_report(root, {other}, ReportContext{1, 3, true, "", ""});
    CHECK_THAT(text, Catch::Contains("node7"));
    CHECK_THAT(text, Catch::Contains("5 (local rank 1)"));
    CHECK_THAT(text, Catch::Contains("4242"));
    CHECK_THAT(text, Catch::Contains("OOM killer"));
    CHECK_THAT(text, Catch::Contains("UTC"));
    CHECK_THAT(text, Catch::Contains("restarts used: 1 of 3"));
    CHECK_THAT(text, Catch::Contains(
                         "rank 4 (local rank 0, pid 4241): signal 15 (SIGTERM), stopped by ptrun"));
}

TEST_CASE("tail_of_file keeps the last lines", "[launcher][report]") {
    std::string path = "/tmp/ptrun_tail_test_" + std::to_string(::getpid());
    {
        std::ofstream out(path);
        for (int i = 0; i < 30; ++i) out << "line " << i << "\n";
    }
    CHECK(tail_of_file(path, 3) == "line 27\nline 28\nline 29");
    CHECK(tail_of_file(path, 100).rfind("line 0\n", 0) == 0);
    std::remove(path.c_str());
    CHECK(tail_of_file(path, 3).empty());
}
