// TimerFifo with raw writers that come and go (torch's real clients: tests/integration
// test_file_timer.py).
#include "ptrun/watchdog/timer_fifo.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "run_io.hpp"

using namespace ptrun::watchdog;
using ptrun::test::run_until;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("ptrun-fifo-test-" + std::to_string(::getpid()));
    std::string path = (dir / "timer").string();
    boost::asio::io_context io;
    std::vector<TimerRequest> requests;
    std::vector<std::string> errors;

    Fixture() { std::filesystem::create_directories(dir); }
    ~Fixture() { std::filesystem::remove_all(dir); }

    std::unique_ptr<TimerFifo> open() {
        return std::make_unique<TimerFifo>(
            io, path, [this](const TimerRequest& r) { requests.push_back(r); },
            [this](const std::string& e) { errors.push_back(e); });
    }

    /// As FileTimerClient does: open non-blocking, write, close.
    void write(const std::string& bytes) const {
        const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        REQUIRE(fd >= 0);
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
            REQUIRE(n > 0);
            done += static_cast<std::size_t>(n);
        }
        ::close(fd);
    }

    bool wait_requests(std::size_t n) {
        return run_until(
            io, [&] { return requests.size() >= n; }, 20s);
    }
    bool wait_errors(std::size_t n) {
        return run_until(
            io, [&] { return errors.size() >= n; }, 20s);
    }
};

std::string line(pid_t pid, const std::string& scope, double expiry, int signal = 9) {
    return format_timer_request(TimerRequest{pid, scope, expiry, signal}) + "\n";
}

}  // namespace

TEST_CASE("requests from writers that come and go are all read", "[watchdog][timer]") {
    Fixture f;
    auto fifo = f.open();
    struct stat st {};
    REQUIRE(::stat(f.path.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    for (int i = 0; i < 20; ++i) f.write(line(100 + i, "s" + std::to_string(i), 1e9 + i));
    REQUIRE(f.wait_requests(20));
    for (int i = 0; i < 20; ++i) CHECK(f.requests[static_cast<std::size_t>(i)].pid == 100 + i);
    // Every writer has closed; the reader is still there for the next one.
    f.write(line(7, "later", -1, 0));
    REQUIRE(f.wait_requests(21));
    CHECK(f.requests.back().is_release());
    CHECK(f.errors.empty());
}

TEST_CASE("lines split across writes and several lines in one write are framed",
          "[watchdog][timer]") {
    Fixture f;
    auto fifo = f.open();
    const std::string a = line(1, "a", 5), b = line(2, "b", 6);
    f.write(a + b);
    const int fd = ::open(f.path.c_str(), O_WRONLY | O_NONBLOCK);
    REQUIRE(fd >= 0);
    const std::string c = line(3, "c", 7);
    REQUIRE(::write(fd, c.data(), 10) == 10);
    REQUIRE(f.wait_requests(2));
    CHECK(f.requests.size() == 2);
    REQUIRE(::write(fd, c.data() + 10, c.size() - 10) == static_cast<ssize_t>(c.size() - 10));
    ::close(fd);
    REQUIRE(f.wait_requests(3));
    CHECK(f.requests[2] == TimerRequest{3, "c", 7, 9});
}

TEST_CASE("malformed and over-long lines are reported and skipped", "[watchdog][timer]") {
    Fixture f;
    auto fifo = f.open();
    f.write("not json\n");
    f.write(std::string(5000, 'x') + "\n");
    f.write("\n");  // empty lines are ignored
    f.write(line(9, "ok", 1));
    REQUIRE(f.wait_requests(1));
    REQUIRE(f.wait_errors(2));
    CHECK_THAT(f.errors[0], Catch::Contains("not a flat JSON object"));
    CHECK_THAT(f.errors[1], Catch::Contains("longer than 4096 bytes"));
    CHECK(f.requests.at(0).scope_id == "ok");
}

TEST_CASE("a throwing request handler does not stop the reader", "[watchdog][timer]") {
    Fixture f;
    int seen = 0;
    TimerFifo fifo(
        f.io, f.path,
        [&](const TimerRequest&) {
            ++seen;
            throw std::runtime_error("agent bug");
        },
        [](const std::string&) {});
    f.write(line(1, "a", 1));
    f.write(line(2, "b", 1));
    CHECK(run_until(
        f.io, [&] { return seen == 2; }, 20s));
}

TEST_CASE("an existing FIFO is replaced, anything else refused", "[watchdog][timer]") {
    Fixture f;
    { std::ofstream(f.path) << "precious"; }
    CHECK_THROWS_WITH(f.open(), Catch::Contains(f.path) && Catch::Contains("is not a FIFO"));
    CHECK(std::filesystem::file_size(f.path) == 8);  // untouched
    std::filesystem::remove(f.path);
    REQUIRE(::mkfifo(f.path.c_str(), 0644) == 0);
    auto fifo = f.open();
    f.write(line(1, "a", 1));
    CHECK(f.wait_requests(1));
    CHECK_THROWS_WITH(TimerFifo(f.io, (f.dir / "missing" / "t").string(), {}, {}),
                      Catch::Contains("cannot create it"));
}

TEST_CASE("the FIFO goes away with its reader and no handler runs after", "[watchdog][timer]") {
    Fixture f;
    auto fifo = f.open();
    f.write(line(1, "a", 1));
    fifo.reset();
    CHECK_FALSE(std::filesystem::exists(f.path));
    f.io.restart();
    f.io.run_for(100ms);  // drains the aborted read
    CHECK(f.requests.empty());
    CHECK(::open(f.path.c_str(), O_WRONLY | O_NONBLOCK) < 0);
    CHECK(errno == ENOENT);
}
