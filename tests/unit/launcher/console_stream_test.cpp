// ConsoleStream against a real pipe whose reader is late: worker output may be dropped, ptrun's
// own lines (a report) are not.
#include "ptrun/launcher/output/console_stream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
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

TEST_CASE("console stream: stdout and stderr into one pipe never cut each other's lines",
          "[launcher][console]") {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    // As under `ptrun ... 2>&1 | reader`: two streams, one pipe, a reader slower than the writers.
    auto out = std::make_unique<ConsoleStream>(fds[1], "stdout", 1u << 20);
    auto err = std::make_unique<ConsoleStream>(fds[1], "stderr", 1u << 20);
    const std::string out_line = "[host:0] " + std::string(90, 'o') + "\n";
    const std::string err_line = "[host:1] " + std::string(130, 'e') + "\n";
    auto write_lines = [](ConsoleStream& s, const std::string& line) {
        std::string batch;
        for (int i = 0; i < 40; ++i) batch += line;  // relays write many lines at once
        for (int i = 0; i < 100; ++i) s.write(batch);
    };
    std::thread a([&] { write_lines(*out, out_line); });
    std::thread b([&] { write_lines(*err, err_line); });
    std::thread end([&] {
        a.join();
        b.join();
        out.reset();
        err.reset();
        ::close(fds[1]);
    });
    std::string seen;
    char buf[1000];  // small reads: the pipe stays full and writes come back partial
    for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        seen.append(buf, static_cast<std::size_t>(n));
    }
    end.join();
    ::close(fds[0]);
    std::size_t start = 0, lines = 0, cut = 0;
    while (start < seen.size()) {
        const auto nl = seen.find('\n', start);
        const std::string line = seen.substr(start, nl - start + 1);
        start = nl == std::string::npos ? seen.size() : nl + 1;
        if (line.rfind("\n[ptrun]", 0) == 0 || line.rfind("[ptrun]", 0) == 0 || line == "\n") {
            continue;  // the note about dropped bytes
        }
        ++lines;
        if (line != out_line && line != err_line) ++cut;
    }
    CHECK(lines > 0);
    CHECK(cut == 0);
}

namespace {

/// How many descriptors this process holds (/proc/self/fd's entries, its own listing's included).
int open_descriptors() {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        (void)entry;
        ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("console stream: a pipe gets a non-blocking description of its own, /dev/null none",
          "[launcher][console]") {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    REQUIRE(null >= 0);
    {
        const int before = open_descriptors();
        ConsoleStream to_null(null, "stderr", 4096);
        to_null.write("to /dev/null\n");
        CHECK(to_null.flush(std::chrono::seconds(5)));
        CHECK(open_descriptors() == before);  // written to as given: it never blocks
        ConsoleStream to_pipe(fds[1], "stderr", 4096);
        to_pipe.write("to a pipe\n");
        CHECK(to_pipe.flush(std::chrono::seconds(5)));
        CHECK(open_descriptors() == before + 1);  // its own O_NONBLOCK description
    }
    CHECK((::fcntl(fds[1], F_GETFL) & O_NONBLOCK) == 0);  // the shared one untouched
    char buf[64];
    CHECK(::read(fds[0], buf, sizeof buf) == 10);
    ::close(null);
    ::close(fds[0]);
    ::close(fds[1]);
}
