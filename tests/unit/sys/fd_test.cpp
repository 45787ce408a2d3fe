#include "ptrun/sys/fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <utility>
#include <catch2/catch.hpp>

using ptrun::sys::Fd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST_CASE("an Fd closes what it owns once, and moves ownership", "[sys]") {
    int raw[2];
    REQUIRE(::pipe2(raw, O_CLOEXEC) == 0);
    ::close(raw[1]);
    {
        Fd a(raw[0]);
        CHECK(a);
        Fd b(std::move(a));
        CHECK_FALSE(a);
        CHECK(b.get() == raw[0]);
        Fd c;
        c = std::move(b);
        CHECK(c.get() == raw[0]);
        CHECK(is_open(raw[0]));
    }
    CHECK_FALSE(is_open(raw[0]));

    REQUIRE(::pipe2(raw, O_CLOEXEC) == 0);
    Fd kept(raw[0]);
    const int released = kept.release();
    CHECK_FALSE(kept);
    kept.reset();  // owns nothing: closes nothing
    CHECK(is_open(released));
    ::close(released);
    ::close(raw[1]);
}
