#pragma once
/// A pipe for one test: both ends closed at scope exit.

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "ptrun/sys/fd.hpp"

namespace ptrun::launcher::test {

struct Pipe {
    sys::Fd read, write;
    Pipe() {
        int fds[2];
        REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
        read = sys::Fd(fds[0]);
        write = sys::Fd(fds[1]);
    }
};

}  // namespace ptrun::launcher::test
