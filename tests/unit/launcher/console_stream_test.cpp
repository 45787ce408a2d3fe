// ConsoleStream against a real pipe whose reader is late: worker output may be dropped, ptrun's
// own lines (a report) are not.
#include "ptrun/launcher/output/console_stream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

using namespace ptrun::launcher;

namespace {

/// Everything in `fd` until every writer has closed it.
std::string read_all(int fd) {
    std::string out;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace

TEST_CASE("console stream: a full queue drops worker output, never ptrun's own lines",
          "[launcher][console]") {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    auto stream = std::make_unique<ConsoleStream>(fds[1], "stderr", 4096);
    const std::string line(1023, 'w');
    // Nobody reads yet: the pipe fills (64 KiB), then the 4 KiB queue, then output is dropped.
    for (int i = 0; i < 200; ++i) stream->write(line + "\n");
    CHECK(stream->dropped() > 0);
    const auto dropped = stream->dropped();
    stream->write_own("[ptrun host:1] error: the report\n");
    CHECK(stream->dropped() == dropped);  // kept in the reserved room
    stream->write("worker output past the bound\n");
    CHECK(stream->dropped() > dropped);
    // The reader starts late, after ptrun has finished: the destructor's final flush waits for it.
    std::thread late_end([&] {
        stream.reset();  // flushes what is queued, then stops the helper thread
        ::close(fds[1]);
    });
    const std::string seen = read_all(fds[0]);
    late_end.join();
    ::close(fds[0]);
    CHECK(seen.find("[ptrun host:1] error: the report\n") != std::string::npos);
    CHECK(seen.find("worker output past the bound") == std::string::npos);
}
