#include "ptrun/launcher/process/exit_status.hpp"

#include <catch2/catch.hpp>
#include <csignal>

using namespace ptrun::launcher;

TEST_CASE("exit status: shell convention and names", "[launcher]") {
    CHECK(WorkerExit{3, 0}.shell_code() == 3);
    CHECK(WorkerExit{0, SIGSEGV}.shell_code() == 139);
    CHECK(WorkerExit{0, 0}.succeeded());
    CHECK(signal_name(SIGTERM) == "SIGTERM");
    CHECK(signal_name(63) == "SIG63");
    CHECK(signal_number("SIGUSR2") == SIGUSR2);
    CHECK(signal_number("HUP") == SIGHUP);
    CHECK(signal_number("9") == 9);
    CHECK(signal_number("SIGNOPE") == 0);
    CHECK(describe(WorkerExit{0, SIGKILL}).find("OOM") != std::string::npos);
    CHECK(describe(WorkerExit{2, 0}) == "exit code 2");
}
