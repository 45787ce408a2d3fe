#include "ptrun/launcher/output/checkpoint_report.hpp"

#include <catch2/catch.hpp>
#include <csignal>

using namespace ptrun::launcher;

namespace {

WorkerEnd end_of(int rank, WorkerExit exit, bool stopped) {
    WorkerEnd e;
    e.rank = rank;
    e.exit = exit;
    e.stopped_by_ptrun = stopped;
    return e;
}

}  // namespace

TEST_CASE("checkpoint report names the ranks that exited in time and those stopped",
          "[launcher][checkpoint]") {
    const std::vector<WorkerEnd> ends{end_of(0, {0, 0}, false), end_of(1, {0, SIGTERM}, true)};
    const auto text = format_checkpoint_report(ends, SIGUSR1, std::chrono::seconds(60));
    CHECK(text ==
          "checkpoint signal SIGUSR1: exited within the grace (60 s, --checkpoint-grace): rank 0 "
          "(exit code 0); stopped by ptrun: rank 1 (signal 15 (SIGTERM))");
}

TEST_CASE("checkpoint report when every rank exited in time says so alone",
          "[launcher][checkpoint]") {
    const std::vector<WorkerEnd> ends{end_of(0, {0, 0}, false), end_of(1, {0, 0}, false)};
    const auto text = format_checkpoint_report(ends, SIGUSR1, std::chrono::seconds(5));
    CHECK(text.find("rank 0 (exit code 0), rank 1 (exit code 0)") != std::string::npos);
    CHECK(text.find("stopped") == std::string::npos);
}

TEST_CASE("checkpoint report when no rank exited in time", "[launcher][checkpoint]") {
    const std::vector<WorkerEnd> ends{end_of(3, {0, SIGKILL}, true)};
    const auto text = format_checkpoint_report(ends, SIGUSR2, std::chrono::seconds(1));
    CHECK(text.find("checkpoint signal SIGUSR2: no rank exited within the grace") == 0);
    CHECK(text.find("stopped by ptrun: rank 3") != std::string::npos);
}
