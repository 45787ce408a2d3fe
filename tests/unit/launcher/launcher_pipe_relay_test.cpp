// --from-launcher: the launching ptrun's pipe relayed for the whole run: a signal's byte is
// raised in this process, other bytes are ignored, and the pipe's end ends the inner pipe that
// the relay put in its place.
#include "ptrun/launcher/hosts/launcher_pipe_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <ctime>

#include "ptrun/sys/fd.hpp"
#include "test_pipe.hpp"

using ptrun::launcher::launcher_byte_signal;
using ptrun::launcher::launcher_signal_byte;
using ptrun::launcher::LauncherPipeRelay;
using ptrun::launcher::test::Pipe;
using ptrun::sys::Fd;

namespace {

/// True when `fd` becomes readable within `deadline_ms`.
bool readable_within(int fd, int deadline_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, deadline_ms) == 1;
}

}  // namespace

TEST_CASE("launcher signal bytes: the stop signals, nothing else", "[hosts]") {
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) {
        const char byte = launcher_signal_byte(signo);
        CHECK(byte != 0);
        CHECK(launcher_byte_signal(byte) == signo);
    }
    CHECK(launcher_signal_byte(SIGKILL) == 0);
    CHECK_FALSE(launcher_byte_signal('x').has_value());
    CHECK_FALSE(launcher_byte_signal('\0').has_value());
}

TEST_CASE("LauncherPipeRelay: other bytes pass nothing on, the pipe's end ends the inner pipe",
          "[hosts]") {
    Pipe launcher;
    Fd stdin_slot(::fcntl(launcher.read.get(), F_DUPFD_CLOEXEC, 3));  // stands for stdin
    LauncherPipeRelay relay(stdin_slot.get());
    REQUIRE(::write(launcher.write.get(), "xyz\n", 4) == 4);
    CHECK_FALSE(readable_within(stdin_slot.get(), 100));  // ignored, not forwarded
    launcher.write.reset();
    REQUIRE(readable_within(stdin_slot.get(), 10'000));
    char c;
    CHECK(::read(stdin_slot.get(), &c, 1) == 0);  // end of file
}

TEST_CASE("LauncherPipeRelay: a signal's byte raises it in this process", "[hosts]") {
    sigset_t hup, old;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    // Blocked here and so in the relay's thread (it inherits the mask): it stays pending.
    REQUIRE(::pthread_sigmask(SIG_BLOCK, &hup, &old) == 0);
    {
        Pipe launcher;
        Fd stdin_slot(::fcntl(launcher.read.get(), F_DUPFD_CLOEXEC, 3));
        LauncherPipeRelay relay(stdin_slot.get());
        const char byte = launcher_signal_byte(SIGHUP);
        REQUIRE(::write(launcher.write.get(), &byte, 1) == 1);
        const timespec deadline{10, 0};
        CHECK(::sigtimedwait(&hup, nullptr, &deadline) == SIGHUP);
        CHECK_FALSE(readable_within(stdin_slot.get(), 0));  // no end: the job goes on
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}
