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

TEST_CASE("the @record advice is given only where @record would have written a file",
          "[launcher][report]") {
    WorkerEnd root;
    root.error_file = "/nonexistent/error.json";
    const ReportContext python{0, 0, true, "/usr/bin/python3", "PATH"};
    const ReportContext native{0, 0, true, "", ""};
    root.exit = WorkerExit{1, 0};  // an uncaught exception
    CHECK_THAT(format_failure_report(root, {}, python), Catch::Contains("@record"));
    CHECK_THAT(format_failure_report(root, {}, native), !Catch::Contains("@record"));
    for (auto exit : {WorkerExit{7, 0}, WorkerExit{0, SIGKILL}}) {  // sys.exit(7), kill -9
        root.exit = exit;
        const auto text = format_failure_report(root, {}, python);
        CHECK_THAT(text, Catch::Contains("error file  : <none written>\n"));
        CHECK_THAT(text, !Catch::Contains("@record"));
    }
}

TEST_CASE("error_file_summary quotes the first line of the worker's message",
          "[launcher][report]") {
    WorkerEnd end;
    end.error_file = "/tmp/ptrun_summary_test_" + std::to_string(::getpid()) + ".json";
    CHECK(error_file_summary(end).empty());  // none written
    {
        std::ofstream out(end.error_file);
        out << R"({"message": {"message": "RuntimeError: boom on rank 2\nmore", "extraInfo": )"
               R"({"py_callstack": "Traceback ...", "timestamp": "1"}}})";
    }
    CHECK(error_file_summary(end) == "RuntimeError: boom on rank 2");
    std::remove(end.error_file.c_str());
}

TEST_CASE("worker_message: the error file's message, else the runner's exception summary",
          "[launcher][report]") {
    const std::string base = "/tmp/ptrun_message_test_" + std::to_string(::getpid());
    WorkerEnd end;
    end.error_file = base + ".json";
    end.exception_file = base + ".txt";
    CHECK(worker_message(end).empty());  // neither written
    std::ofstream(end.exception_file) << "ValueError: bad batch " << std::string(300, 'x') << "\n";
    CHECK(worker_message(end) == "ValueError: bad batch " + std::string(178, 'x') + "...");
    std::ofstream(end.error_file) << R"({"message": {"message": "RuntimeError: from record"}})";
    CHECK(worker_message(end) == "RuntimeError: from record");
    std::remove(end.error_file.c_str());
    std::remove(end.exception_file.c_str());
}
